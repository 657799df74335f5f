/**
 * The admin CLI against a real database: a created key works and is printed once, listings never
 * show it, disable sticks across config syncs, top-ups are exact, usage prints.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, Option, Redacted, References, Result } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AccountKeySettingsShape, accountKeySettingsLayer } from "../../src/config/AppConfig.js"
import { sha256Hex } from "../../src/config/resolve.js"
import { runCli } from "../../src/cli/run.js"
import { parseSecretKey } from "../../src/domain/secretBox.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import { Store } from "../../src/store/Store.js"
import { type Backend, dataOf, openStore, type TestDatabase } from "./harness.js"
import { storeConfig } from "./suite.js"

const cli = async (db: TestDatabase, ...argv: Array<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await runCli(argv, { DATABASE_URL: db.url }, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join("\n"), err: err.join("\n") }
}

/** `runCli` with the environment given and, when `stdin` is, that text piped in. */
const cliWith = async (env: Record<string, string>, stdin: string | undefined, ...argv: Array<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await runCli(argv, env, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    ...(stdin === undefined ? {} : { stdin: { piped: true, read: () => Promise.resolve(stdin) } })
  })
  return { code, out: out.join("\n"), err: err.join("\n") }
}

/** The accounts a gateway's store on `db` loads with these key settings, each with its key in clear (undefined: none). */
const accountsSeen = async (db: TestDatabase, keys: Partial<AccountKeySettingsShape>) => {
  const rt = openStore(
    db,
    dataOf(storeConfig()),
    {},
    Layer.merge(Layer.succeed(References.MinimumLogLevel, "Error"), accountKeySettingsLayer(keys))
  )
  try {
    const accounts = await rt.runPromise(Effect.map(Store, (store) => store.accounts()))
    return new Map(accounts.map((a) => [a.name, a.secret === undefined ? undefined : Redacted.value(a.secret)]))
  } finally {
    await rt.dispose()
  }
}

const secretKeyText = () => randomBytes(32).toString("hex")
const keyOf = (text: string) => Result.getOrThrow(parseSecretKey(text, "MODELGATE_SECRET_KEY"))

/** Opens the store (which syncs the config), reads a key, closes it again (SQLite: one writer at a time). */
const lookup = async (db: TestDatabase, key: string) => {
  const rt = openStore(db, dataOf(storeConfig()))
  try {
    return Option.getOrUndefined(await rt.runPromise(Effect.flatMap(KeyRepo, (r) => r.findByHash(sha256Hex(key)))))
  } finally {
    await rt.dispose()
  }
}

export const cliSuite = (makeBackend: () => Backend) => {
  let backend: Backend
  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(() => backend.cleanup())

  describe("modelgate CLI", () => {
    it("keys create prints a working key once; list shows only its prefix; disable sticks", async () => {
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid") // creates the schema and syncs users and groups

      const created = await cli(db, "keys", "create", "--user", "alice", "--group", "paid", "--name", "cli-1", "--quota-usd", "2.5")
      expect(created.code).toBe(0)
      const key = /(sk-mg-[A-Za-z0-9_-]{20,})/.exec(created.out)?.[1]
      expect(key).toBeDefined()
      expect(created.out.split(key!).length).toBe(2) // printed exactly once

      const found = await lookup(db, key!)
      expect(found?.key).toMatchObject({ id: "cli-1", status: "active", quotaMicros: 2_500_000, userName: "alice" })

      const listed = await cli(db, "keys", "list", "--user", "alice")
      expect(listed.code).toBe(0)
      expect(listed.out).toContain("cli-1")
      expect(listed.out).toContain(found!.key.prefix)
      expect(listed.out).not.toContain(key!)

      expect((await cli(db, "keys", "disable", "cli-1")).code).toBe(0)
      expect((await lookup(db, key!))?.key.status).toBe("disabled")
      // A config key disabled from the CLI stays disabled when the file is synced again.
      expect((await cli(db, "keys", "disable", "alice-paid")).code).toBe(0)
      expect((await lookup(db, "sk-store-alice-paid"))?.key.status).toBe("disabled")
    })

    it("users topup adds the exact amount; usage prints per key and per key in detail", async () => {
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      const topup = await cli(db, "users", "topup", "alice", "12.345678", "--note", "invoice 7")
      expect(topup.code).toBe(0)
      expect(topup.out).toContain("balance is now 112.345678 USD")
      expect((await lookup(db, "sk-store-alice-paid"))?.user.balanceMicros).toBe(112_345_678)

      const summary = await cli(db, "usage")
      expect(summary.code).toBe(0)
      expect(summary.out).toMatch(/^KEY\s+USER\s+GROUP/)
      expect(summary.out).toContain("alice-paid")
      const detail = await cli(db, "usage", "--key", "alice-paid")
      expect(detail.code).toBe(0)
      expect(JSON.parse(detail.out)).toMatchObject({ mode: "unrestricted", balance: 112.345678 })
    })

    it("users create and keys create take --rpm-limit / --tpm-limit, which the next lookup carries", async () => {
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      const user = await cli(db, "users", "create", "gus", "--balance-usd", "5", "--rpm-limit", "30", "--json")
      expect(user.code).toBe(0)
      expect(JSON.parse(user.out)).toMatchObject({ name: "gus", rpm_limit: 30, tpm_limit: null })
      const created = await cli(db, "keys", "create", "--user", "gus", "--group", "paid", "--name", "gus-1", "--tpm-limit", "9000", "--json")
      expect(created.code).toBe(0)
      const issued = JSON.parse(created.out) as { key: string; rpm_limit: number | null; tpm_limit: number | null }
      expect(issued).toMatchObject({ rpm_limit: null, tpm_limit: 9000 })

      const found = await lookup(db, issued.key)
      expect(found?.key).toMatchObject({ id: "gus-1", tpmLimit: 9000 })
      expect(found?.key.rpmLimit).toBeUndefined()
      expect(found?.user).toMatchObject({ name: "gus", rpmLimit: 30 })
      expect(found?.user.tpmLimit).toBeUndefined()
      const listed = await cli(db, "users", "list")
      expect(listed.out).toMatch(/^USER\s+BALANCE_USD\s+CONCURRENCY\s+RPM_LIMIT\s+TPM_LIMIT/)
      expect(listed.out).toMatch(/^gus\s+5(\.0+)?\s+5\s+30\s+-\s/m)
      const audit = JSON.parse((await cli(db, "audit", "--json", "--target", "gus-1")).out) as Array<{ detail: Record<string, unknown> }>
      expect(audit[0]?.detail).toMatchObject({ rpm_limit: null, tpm_limit: 9000 })

      expect((await cli(db, "keys", "create", "--user", "gus", "--group", "paid", "--rpm-limit", "0")).code).toBe(2)
      expect((await cli(db, "users", "create", "hal", "--tpm-limit", "-5")).code).toBe(2)
      expect((await cli(db, "keys", "create", "--help")).out).toContain("--rpm-limit")
    })

    it("accounts add reads the key from stdin or a file (never argv), stores it encrypted; list never prints it; disable takes it out", async () => {
      const KEY_A = "sk-cli-piped-upstream-key-000001"
      const KEY_B = "sk-cli-filed-upstream-key-000002"
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      const secret = secretKeyText()
      const env = { DATABASE_URL: db.url, MODELGATE_SECRET_KEY: secret }
      const add = (name: string, stdin: string | undefined, ...more: Array<string>) =>
        cliWith(env, stdin, "accounts", "add", name, "--platform", "openai", "--group", "paid", ...more)

      const piped = await add("piped-oa", `${KEY_A}\n`)
      expect(piped.code).toBe(0)
      expect(piped.out).toContain("Added account 'piped-oa'")
      expect(piped.out).toContain("stored encrypted")
      const dir = mkdtempSync(join(tmpdir(), "modelgate-cli-key-"))
      try {
        writeFileSync(join(dir, "key.txt"), `${KEY_B}\n`, { mode: 0o600 })
        const filed = await add("file-oa", undefined, "--api-key-file", join(dir, "key.txt"), "--base-url", "https://upstream.example/v1/")
        expect(filed.code).toBe(0)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
      // Never from argv; nothing piped and no file: refused, saying how to give it.
      expect((await add("argv-oa", undefined, "--api-key", KEY_A)).code).toBe(2)
      const none = await add("none-oa", undefined)
      expect(none.code).toBe(2)
      expect(none.err).toContain("--api-key-file")
      expect((await add("empty-oa", "\n")).code).toBe(2)
      // Without MODELGATE_SECRET_KEY nothing is stored.
      const unkeyed = await cliWith({ DATABASE_URL: db.url }, KEY_A, "accounts", "add", "unkeyed-oa", "--platform", "openai", "--group", "paid")
      expect(unkeyed.code).toBe(1)
      expect(unkeyed.err).toContain("MODELGATE_SECRET_KEY")

      const listed = await cliWith(env, undefined, "accounts", "list")
      expect(listed.code).toBe(0)
      expect(listed.out).toMatch(/^NAME\s+PLATFORM\s+KIND\s+KEY/)
      expect(listed.out).toMatch(/piped-oa\s+openai\s+http\s+stored/)
      expect(listed.out).toContain("https://upstream.example/v1")
      expect(listed.out).not.toMatch(/argv-oa|none-oa|empty-oa|unkeyed-oa/)
      const asJson = await cliWith(env, undefined, "accounts", "list", "--json")
      expect(JSON.parse(asJson.out)).toEqual(expect.arrayContaining([expect.objectContaining({ name: "file-oa", key_source: "stored", status: "active" })]))
      const audit = await cliWith(env, undefined, "audit", "--json")
      for (const text of [piped.out, piped.err, listed.out, asJson.out, audit.out]) {
        expect(text).not.toContain(KEY_A)
        expect(text).not.toContain(KEY_B)
        expect(text).not.toMatch(/v1:[0-9a-f]{8}:/)
      }

      // A gateway with the same MODELGATE_SECRET_KEY sends them; disabled, it no longer has the account.
      const seen = await accountsSeen(db, { secretKey: keyOf(secret) })
      expect([seen.get("piped-oa"), seen.get("file-oa")]).toEqual([KEY_A, KEY_B])
      const disabled = await cliWith(env, undefined, "accounts", "disable", "piped-oa")
      expect(disabled.code).toBe(0)
      expect(disabled.out).toContain("Disabled account 'piped-oa'")
      expect((await cliWith(env, undefined, "accounts", "list")).out).toMatch(/piped-oa\s.*disabled$/m)
      expect((await accountsSeen(db, { secretKey: keyOf(secret) })).has("piped-oa")).toBe(false)
      expect((await cliWith(env, undefined, "accounts", "disable", "piped-oa")).code).toBe(1)
    })

    it("accounts rotate-key re-encrypts the stored keys under a new MODELGATE_SECRET_KEY, opening them with the previous one", async () => {
      const KEY = "sk-cli-rotated-upstream-key-00003"
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      const [oldKey, newKey] = [secretKeyText(), secretKeyText()]
      const added = await cliWith({ DATABASE_URL: db.url, MODELGATE_SECRET_KEY: oldKey }, KEY, "accounts", "add", "rot-oa", "--platform", "openai", "--group", "paid")
      expect(added.code).toBe(0)
      expect((await accountsSeen(db, { secretKey: keyOf(newKey) })).get("rot-oa")).toBeUndefined()

      const rotated = await cliWith(
        { DATABASE_URL: db.url, MODELGATE_SECRET_KEY: newKey, MODELGATE_SECRET_KEY_PREVIOUS: oldKey },
        undefined,
        "accounts",
        "rotate-key"
      )
      expect(rotated.code).toBe(0)
      expect(rotated.out).toContain("Re-encrypted 1 stored account key(s)")
      // The old key is no longer needed.
      expect((await accountsSeen(db, { secretKey: keyOf(newKey) })).get("rot-oa")).toBe(KEY)
      const again = await cliWith({ DATABASE_URL: db.url, MODELGATE_SECRET_KEY: newKey }, undefined, "accounts", "rotate-key")
      expect(again.out).toContain("Re-encrypted 0 stored account key(s) under MODELGATE_SECRET_KEY; 1 already were")
      // Under a key that opens nothing: said, and the key is left as it was.
      const wrong = await cliWith({ DATABASE_URL: db.url, MODELGATE_SECRET_KEY: secretKeyText() }, undefined, "accounts", "rotate-key")
      expect(wrong.code).toBe(1)
      expect(wrong.err).toContain("account 'rot-oa': its key was left as it was")
      expect((await accountsSeen(db, { secretKey: keyOf(newKey) })).get("rot-oa")).toBe(KEY)
      // A malformed MODELGATE_SECRET_KEY is refused without being repeated.
      const malformed = await cliWith({ DATABASE_URL: db.url, MODELGATE_SECRET_KEY: "not-a-32-byte-key" }, undefined, "accounts", "list")
      expect(malformed.code).toBe(1)
      expect(malformed.err).toContain("MODELGATE_SECRET_KEY must be 32 random bytes")
      expect(malformed.err).not.toContain("not-a-32-byte-key")
    })

    it("refuses bad input with exit 2 and unknown names with exit 1", async () => {
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      expect((await cli(db, "users", "topup", "alice", "1.2345678")).code).toBe(2)
      expect((await cli(db, "keys", "create", "--user", "alice")).code).toBe(2)
      expect((await cli(db, "keys", "frobnicate")).code).toBe(2)
      expect((await cli(db, "usage", "--start-date", "2026-02-30", "--key", "alice-paid")).code).toBe(2)
      const unknown = await cli(db, "keys", "create", "--user", "nobody", "--group", "paid")
      expect(unknown.code).toBe(1)
      expect(unknown.err).toContain("no user named 'nobody'")
      expect((await cli(db, "keys", "disable", "no-such-key")).code).toBe(1)
      expect((await cli(db, "keys", "disable", "no-such-key")).err).toContain("no key named 'no-such-key'")
    })

    it("answers --version, help per command, a bare group with its commands, and --json", async () => {
      const db = await backend.fresh()
      await lookup(db, "sk-store-alice-paid")
      const version = await cli(db, "--version")
      expect(version.code).toBe(0)
      expect(version.out.trim()).toMatch(/^\d+\.\d+\.\d+$/)
      for (const argv of [["keys"], ["help", "keys"], ["keys", "--help"]]) {
        const help = await cli(db, ...argv)
        expect(help.code).toBe(0)
        for (const command of ["create", "list", "disable", "enable", "rotate", "delete"]) expect(help.out).toContain(command)
      }
      const createHelp = await cli(db, "keys", "create", "--help")
      expect(createHelp.out).toContain("--quota-usd")
      expect(createHelp.out).toContain("Issue a key")

      const created = await cli(db, "keys", "create", "--user", "alice", "--group", "paid", "--name", "json-1", "--json")
      expect(created.code).toBe(0)
      const issued = JSON.parse(created.out) as { id: string; key: string; status: string }
      expect(issued).toMatchObject({ id: "json-1", status: "active" })
      expect(issued.key).toMatch(/^sk-mg-/)
      const listed = JSON.parse((await cli(db, "keys", "list", "--json", "--user", "alice")).out) as Array<{ id: string }>
      expect(listed.map((k) => k.id)).toContain("json-1")
      const audit = JSON.parse((await cli(db, "audit", "--json", "--target", "json-1")).out) as Array<{ action: string; actor: string }>
      expect(audit).toEqual([expect.objectContaining({ action: "key.create", actor: "cli" })])
    })
  })
}
