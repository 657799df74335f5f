/**
 * The admin CLI against a real database: a created key works and is printed once, listings never
 * show it, disable sticks across config syncs, top-ups are exact, usage prints.
 */
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sha256Hex } from "../../src/config/resolve.js"
import { runCli } from "../../src/cli/run.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import { type Backend, dataOf, openStore, type TestDatabase } from "./harness.js"
import { storeConfig } from "./suite.js"

const cli = async (db: TestDatabase, ...argv: Array<string>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  const code = await runCli(argv, { DATABASE_URL: db.url }, { out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join("\n"), err: err.join("\n") }
}

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
