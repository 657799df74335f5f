/**
 * The admin API over a real socket, beside a gateway on the same store (simulator upstreams):
 * the token, the envelope, users and balances, keys created / disabled / rotated / deleted with
 * the next public request seeing the change at once, what the config file owns, usage reports
 * and CSV, and the audit trail.
 */
import { randomBytes } from "node:crypto"
import { Effect, Layer, ManagedRuntime, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AccountKeySettingsShape, AppConfig } from "../../src/config/AppConfig.js"
import { sha256Hex } from "../../src/config/resolve.js"
import type { Principal } from "../../src/domain/model.js"
import { parseSecretKey } from "../../src/domain/secretBox.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import { databaseLayer } from "../../src/store/Database.js"
import * as KeyRepoSql from "../../src/store/keyRepoSql.js"
import { Store } from "../../src/store/Store.js"
import {
  ADMIN_TOKEN as TOKEN,
  adminGatewayConfig,
  type GatewayWithAdmin as Running,
  respond,
  startWithAdmin as start
} from "../support/adminGateway.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { type Backend, dataOf, openStore, type TestDatabase } from "./harness.js"

interface Answer {
  readonly status: number
  readonly text: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test reads of JSON answers
  readonly json: any
  readonly contentType: string | null
}

const call = async (base: string, method: string, path: string, body?: unknown, token: string | null = TOKEN): Promise<Answer> => {
  const headers: Record<string, string> = {}
  if (token !== null) headers["authorization"] = `Bearer ${token}`
  if (body !== undefined) headers["content-type"] = "application/json"
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, text, json, contentType: res.headers.get("content-type") }
}

/**
 * The principal a key resolves to through the SQL KeyRepo of a second store on `db`: as it is now
 * (no config sync), or, given a config file, as a gateway restarted with that file would resolve it.
 */
const principalOf = async (db: TestDatabase, key: string, restartWith?: unknown): Promise<Principal | undefined> => {
  const rt = restartWith === undefined
    ? ManagedRuntime.make(
      KeyRepoSql.layer.pipe(
        Layer.provide(Store.layerWith({ reportOrphans: false })),
        Layer.provide(Layer.merge(databaseLayer(db.target), AppConfig.layer(dataOf(adminGatewayConfig), "test")))
      )
    )
    : openStore(db, dataOf(restartWith))
  try {
    return Option.getOrUndefined(await rt.runPromise(Effect.flatMap(KeyRepo, (r) => r.findByHash(sha256Hex(key)))))
  } finally {
    await rt.dispose()
  }
}

/** The minute limits of a principal's key, user and group, in that order (undefined: none). */
const limitsOf = (p: Principal | undefined) =>
  p === undefined
    ? undefined
    : { key: [p.key.rpmLimit, p.key.tpmLimit], user: [p.user.rpmLimit, p.user.tpmLimit], group: [p.group.rpmLimit, p.group.tpmLimit] }


/** What the database holds for an account's key: the variable's name and the sealed key. */
const storedKey = async (db: TestDatabase, name: string) => {
  const rt = ManagedRuntime.make(databaseLayer(db.target))
  try {
    const rows = await rt.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ secret_env: string | null; api_key_sealed: string | null }>`SELECT secret_env, api_key_sealed FROM accounts WHERE name = ${name}`))
    return rows[0]
  } finally {
    await rt.dispose()
  }
}

const secretKey = () => Result.getOrThrow(parseSecretKey(randomBytes(32).toString("hex"), "MODELGATE_SECRET_KEY"))

/** The Authorization header of the upstream's last request. */
const lastAuthorization = (upstream: FakeUpstream) => upstream.requests.at(-1)?.headers["authorization"]

const expectEnvelope = (a: Answer, status: number, code: string) => {
  expect(a.status).toBe(status)
  expect(a.json?.error?.code).toBe(code)
  expect(typeof a.json?.error?.message).toBe("string")
  expect(typeof a.json?.error?.type).toBe("string")
}

export const adminSuite = (makeBackend: () => Backend) => {
  let backend: Backend
  const running: Array<Running> = []
  const fresh = async () => {
    const r = await start(await backend.fresh())
    running.push(r)
    return r
  }
  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(async () => {
    for (const r of running) await r.close().catch(() => undefined)
    await backend.cleanup()
  })

  describe("admin API: account keys", () => {
    const STORED = "sk-admin-stored-upstream-key-0001"
    const FROM_ENV = "sk-admin-env-upstream-key-000002"
    let upstream: FakeUpstream
    beforeAll(async () => {
      upstream = await startFakeUpstream()
    })
    afterAll(async () => {
      await upstream.close()
    })
    // The gateway's environment: an account key under the prefix the tests allow, and what no account may name.
    const env = { MG_ADMIN_ACCT_KEY_1: FROM_ENV, DATABASE_URL: "postgres://user:database-password@db.internal/modelgate" }
    const startWith = async (keys: Partial<AccountKeySettingsShape>) => {
      const db = await backend.fresh()
      const r = await start(db, { keys, env })
      running.push(r)
      return { ...r, db }
    }
    /** The file's account out of rotation, so that the group is served by the one under test. */
    const servedBy = async (admin: string, gateway: string) => {
      await call(admin, "POST", "/admin/accounts/sim-oa/take-out")
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)
      return lastAuthorization(upstream)
    }

    it("api_key is stored encrypted, sent upstream as the account's key, and no read returns it or its stored form", async () => {
      const { admin, gateway, db } = await startWith({ secretKey: secretKey() })
      const added = await call(admin, "POST", "/admin/accounts", {
        name: "stored-oa",
        platform: "openai",
        base_url: `${upstream.url}/v1`,
        api_key: STORED,
        groups: ["oa"]
      })
      expect(added.status).toBe(201)
      expect(added.json).toMatchObject({ name: "stored-oa", kind: "http", key_source: "stored", health: "ok" })

      const row = await storedKey(db, "stored-oa")
      expect(row?.secret_env).toBeNull()
      expect(row?.api_key_sealed).toMatch(/^v1:[0-9a-f]{8}:/)
      expect(row?.api_key_sealed).not.toContain(STORED)

      expect(await servedBy(admin, gateway)).toBe(`Bearer ${STORED}`)

      const sealedParts = row!.api_key_sealed!.split(":").slice(2)
      const reads = [
        added.text,
        (await call(admin, "GET", "/admin/accounts")).text,
        (await call(admin, "GET", "/admin/audit")).text,
        (await call(admin, "GET", "/admin/usage?by=account")).text,
        (await call(admin, "GET", "/admin/usage.csv?by=account")).text
      ].join("\n")
      expect(reads).toContain("stored-oa")
      expect(reads).not.toContain(STORED)
      for (const part of sealedParts) expect(reads).not.toContain(part)
      const audit = (await call(admin, "GET", "/admin/audit?target=stored-oa")).json
      expect(audit[0]).toMatchObject({ action: "account.create", detail: { key_source: "stored", api_key_env: null } })
    })

    it("a new base_url for a stored key takes the key again; a new key replaces it", async () => {
      const { admin, gateway } = await startWith({ secretKey: secretKey() })
      await call(admin, "POST", "/admin/accounts", { name: "moving-oa", platform: "openai", base_url: `${upstream.url}/v1`, api_key: STORED, groups: ["oa"] })
      expectEnvelope(await call(admin, "PATCH", "/admin/accounts/moving-oa", { base_url: "https://elsewhere.example/v1" }), 400, "account_key_required")
      const replaced = "sk-admin-replaced-upstream-key-03"
      const moved = await call(admin, "PATCH", "/admin/accounts/moving-oa", { base_url: `${upstream.url}/v1/`, api_key: replaced })
      expect(moved.status).toBe(200)
      expect(moved.json).toMatchObject({ key_source: "stored" })
      expect(moved.text).not.toContain(replaced)
      expect(await servedBy(admin, gateway)).toBe(`Bearer ${replaced}`)
      const audit = (await call(admin, "GET", "/admin/audit?target=moving-oa")).json
      expect(audit[0]).toMatchObject({ action: "account.update", detail: { api_key: "replaced", key_source: ["stored", "stored"] } })
      expect(JSON.stringify(audit)).not.toContain(replaced)
    })

    it("after MODELGATE_SECRET_KEY changes, a stored key is not sent until the old key is given as the previous one; the log says why, never the key", async () => {
      const db = await backend.fresh()
      const [k1, k2] = [secretKey(), secretKey()]
      const first = await start(db, { keys: { secretKey: k1 } })
      await call(first.admin, "POST", "/admin/accounts", { name: "stored-oa", platform: "openai", base_url: `${upstream.url}/v1`, api_key: STORED, groups: ["oa"] })
      await first.close()

      const logged: Array<string> = []
      const second = await start(db, { keys: { secretKey: k2 }, log: (line) => logged.push(line) })
      running.push(second)
      // Not sent at all: the upstream refuses the request that came without a key.
      await call(second.admin, "POST", "/admin/accounts/sim-oa/take-out")
      expect(await respond(second.gateway, "sk-admin-config-key-0001")).toBe(502)
      expect(lastAuthorization(upstream)).toBeUndefined()
      expect(logged.join("\n")).toContain("account 'stored-oa' has no usable key")
      expect(logged.join("\n")).toContain(`key id ${k1.id}`)
      expect(logged.join("\n")).not.toContain(STORED)
      await second.close()

      const third = await start(db, { keys: { secretKey: k2, previousSecretKey: k1 } })
      running.push(third)
      expect(await servedBy(third.admin, third.gateway)).toBe(`Bearer ${STORED}`)
    })

    it("without MODELGATE_SECRET_KEY a key is not stored, and the refusal says how to set it", async () => {
      const { admin } = await startWith({})
      const refused = await call(admin, "POST", "/admin/accounts", { name: "keyless", platform: "openai", api_key: STORED, groups: ["oa"] })
      expectEnvelope(refused, 400, "secret_key_unset")
      expect(refused.json.error.message).toContain("MODELGATE_SECRET_KEY")
      expect(refused.json.error.message).toContain("openssl rand -hex 32")
      expect(refused.text).not.toContain(STORED)
      expect((await call(admin, "GET", "/admin/accounts")).json.map((a: { name: string }) => a.name)).not.toContain("keyless")
      // A malformed key is refused without being repeated.
      const short = await call(admin, "POST", "/admin/accounts", { name: "keyless", platform: "openai", api_key: "sk 12 34", groups: ["oa"] })
      expectEnvelope(short, 400, "invalid_request")
      expect(short.text).not.toContain("sk 12 34")
    })

    it("api_key_env: refused without ADMIN_ACCOUNT_ENV_PREFIX; with it, only names that start with it", async () => {
      const closed = await startWith({ secretKey: secretKey() })
      for (const env of ["DATABASE_URL", "ADMIN_TOKEN", "MG_ADMIN_ACCT_KEY_1"]) {
        const refused = await call(closed.admin, "POST", "/admin/accounts", {
          name: "env-oa",
          platform: "openai",
          base_url: `${upstream.url}/v1`,
          api_key_env: env,
          groups: ["oa"]
        })
        expectEnvelope(refused, 400, "api_key_env_not_allowed")
        expect(refused.json.error.message).toContain("ADMIN_ACCOUNT_ENV_PREFIX")
      }

      const { admin, gateway } = await startWith({ accountEnvPrefix: "MG_ADMIN_ACCT_" })
      const add = (env: string) =>
        call(admin, "POST", "/admin/accounts", { name: "env-oa", platform: "openai", base_url: `${upstream.url}/v1`, api_key_env: env, groups: ["oa"] })
      for (const env of ["DATABASE_URL", "ADMIN_TOKEN", "PATH"]) {
        const refused = await add(env)
        expectEnvelope(refused, 400, "api_key_env_not_allowed")
        expect(refused.json.error.message).toContain("MG_ADMIN_ACCT_")
      }
      expectEnvelope(await add("MG_ADMIN_ACCT_UNSET"), 400, "api_key_env_unset")
      const added = await add("MG_ADMIN_ACCT_KEY_1")
      expect(added.status).toBe(201)
      expect(added.json).toMatchObject({ key_source: "env" })
      expect(await servedBy(admin, gateway)).toBe(`Bearer ${FROM_ENV}`)
      // Moving it elsewhere keeps to the same rule; a variable outside the prefix is refused on a change too.
      expectEnvelope(await call(admin, "PATCH", "/admin/accounts/env-oa", { api_key_env: "DATABASE_URL" }), 400, "api_key_env_not_allowed")
    })
  })

  describe("admin API", () => {
    it("wants the admin token on every endpoint, and answers in the envelope", async () => {
      const { admin } = await fresh()
      expectEnvelope(await call(admin, "GET", "/admin/users", undefined, null), 401, "invalid_admin_token")
      expectEnvelope(await call(admin, "GET", "/admin/keys", undefined, "wrong-token-wrong-token"), 401, "invalid_admin_token")
      expectEnvelope(await call(admin, "POST", "/admin/users", { name: "x" }, null), 401, "invalid_admin_token")
      expectEnvelope(await call(admin, "GET", "/admin/nothing-here"), 404, "route_not_found")
      const bad = await call(admin, "POST", "/admin/users", { name: "", concurrency: 0 })
      expectEnvelope(bad, 400, "invalid_request")
      expect(bad.json.error.param).toBe("name")
      expectEnvelope(await call(admin, "POST", "/admin/users", { name: "ok", balance_usd: "-1" }), 400, "invalid_request")
      expectEnvelope(await call(admin, "POST", "/admin/users", { name: "ok", balance_usd: 0.1234567 }), 400, "invalid_request")
    })

    it("serves its OpenAPI document and a docs page without a token, with no CDN", async () => {
      const { admin } = await fresh()
      const spec = await call(admin, "GET", "/openapi.json", undefined, null)
      expect(spec.status).toBe(200)
      expect(Object.keys(spec.json.paths)).toEqual(expect.arrayContaining(["/admin/users", "/admin/keys/{id}/rotate", "/admin/usage.csv"]))
      // Errors are documented in the envelope's shape.
      expect(JSON.stringify(spec.json.paths["/admin/keys"].post.responses["409"])).toContain("\"error\"")
      const docs = await call(admin, "GET", "/docs", undefined, null)
      expect(docs.status).toBe(200)
      expect(docs.contentType).toContain("text/html")
      expect(docs.text).not.toMatch(/<script[^>]+src="https?:/)
      const script = await call(admin, "GET", "/docs/scalar.js", undefined, null)
      expect(script.status).toBe(200)
      expect(script.contentType).toContain("javascript")
      expect(script.text.length).toBeGreaterThan(100_000) // Scalar's standalone reference, served from the install
    })

    it("creates users and changes balances exactly, with a ledger and audit rows", async () => {
      const { admin } = await fresh()
      const created = await call(admin, "POST", "/admin/users", { name: "dana", balance_usd: "10.10", concurrency: 3 })
      expect(created.status).toBe(201)
      expect(created.json).toMatchObject({ name: "dana", balance_usd: 10.1, concurrency: 3, in_config: false })
      expectEnvelope(await call(admin, "POST", "/admin/users", { name: "dana" }), 409, "user_exists")
      expectEnvelope(await call(admin, "GET", "/admin/users/nobody"), 404, "user_not_found")
      expectEnvelope(await call(admin, "POST", "/admin/users/nobody/topup", { amount_usd: 1 }), 404, "user_not_found")

      // 0.1 + 0.2 in floating point is 0.30000000000000004; as decimal strings it is exact.
      expect((await call(admin, "POST", "/admin/users/dana/topup", { amount_usd: "0.1" })).json.balance_usd).toBe(10.2)
      expect((await call(admin, "POST", "/admin/users/dana/topup", { amount_usd: "0.2", note: "promo" })).json.balance_usd).toBe(10.4)
      expect((await call(admin, "PUT", "/admin/users/dana/balance", { amount_usd: 3 })).json.balance_usd).toBe(3)
      expect((await call(admin, "PATCH", "/admin/users/dana", { concurrency: 7 })).json.concurrency).toBe(7)

      const audit = await call(admin, "GET", "/admin/audit?target=dana")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual([
        "user.update",
        "user.set_balance",
        "user.topup",
        "user.topup",
        "user.create"
      ])
      expect(audit.json[1].detail.balance_micros).toEqual([10_400_000, 3_000_000])
      expect(audit.json.every((a: { actor: string }) => a.actor === "admin-api")).toBe(true)
    })

    it("a key created, disabled, enabled, rotated and deleted is seen by the next public request", async () => {
      const { admin, gateway } = await fresh()
      expectEnvelope(await call(admin, "POST", "/admin/keys", { user: "erin", group: "nope" }), 400, "unknown_group")
      expectEnvelope(await call(admin, "POST", "/admin/keys", { user: "nobody", group: "oa" }), 400, "unknown_user")

      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "teammate", quota_usd: 5 })
      expect(issued.status).toBe(201)
      const secret: string = issued.json.key
      expect(secret).toMatch(/^sk-mg-/)
      expect(issued.json).toMatchObject({ id: "teammate", status: "active", quota_usd: 5, source: "admin-api", last_used_at: null })
      expectEnvelope(await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "teammate" }), 409, "key_exists")

      // Listings never show the secret.
      const listed = await call(admin, "GET", "/admin/keys?user=erin")
      expect(listed.text).not.toContain(secret)
      expect(listed.json.map((k: { id: string }) => k.id)).toEqual(["from-file", "teammate"])
      expect((await call(admin, "GET", "/admin/groups")).json.map((g: { name: string; platform: string }) => [g.name, g.platform]))
        .toEqual([["an", "anthropic"], ["oa", "openai"], ["team-sub", "openai"]])

      expect(await respond(gateway, secret)).toBe(200)
      // Caches are dropped with the change: no waiting for their TTL.
      expect((await call(admin, "POST", "/admin/keys/teammate/disable")).json.status).toBe("disabled")
      expect(await respond(gateway, secret)).toBe(401)
      expect((await call(admin, "POST", "/admin/keys/teammate/enable")).json.status).toBe("active")
      expect(await respond(gateway, secret)).toBe(200)
      expectEnvelope(await call(admin, "POST", "/admin/keys/teammate/enable"), 409, "key_not_disabled")

      const rotated = await call(admin, "POST", "/admin/keys/teammate/rotate")
      expect(rotated.json.key).not.toBe(secret)
      expect(await respond(gateway, secret)).toBe(401)
      expect(await respond(gateway, rotated.json.key)).toBe(200)

      const got = await call(admin, "GET", "/admin/keys/teammate")
      expect(got.json.last_used_at).not.toBeNull()
      expect(got.json.quota_used_usd).toBeGreaterThan(0)

      const removed = await call(admin, "DELETE", "/admin/keys/teammate")
      expect(removed.status).toBe(204)
      expect(await respond(gateway, rotated.json.key)).toBe(401)
      expectEnvelope(await call(admin, "GET", "/admin/keys/teammate"), 404, "key_not_found")
      expect((await call(admin, "GET", "/admin/keys")).json.map((k: { id: string }) => k.id)).toEqual(["from-file"])
      expect((await call(admin, "GET", "/admin/keys?include_deleted=true")).json.map((k: { id: string }) => k.id)).toEqual([
        "from-file",
        "teammate"
      ])
    })

    it("a disabled user's keys are refused at once (401 user_disabled), and admitted again when enabled", async () => {
      const { admin, gateway } = await fresh()
      await call(admin, "POST", "/admin/users", { name: "frank", balance_usd: 5 })
      const issued = await call(admin, "POST", "/admin/keys", { user: "frank", group: "oa" })
      expect(await respond(gateway, issued.json.key)).toBe(200)
      expect((await call(admin, "POST", "/admin/users/frank/disable")).json.disabled).toBe(true)
      const refused = await fetch(`${gateway}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${issued.json.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "hi" })
      })
      expect(refused.status).toBe(401)
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("user_disabled")
      // The other users' keys are not touched.
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)
      expect((await call(admin, "POST", "/admin/users/frank/enable")).json.disabled).toBe(false)
      expect(await respond(gateway, issued.json.key)).toBe(200)
      expectEnvelope(await call(admin, "POST", "/admin/users/nobody/disable"), 404, "user_not_found")
      const audit = await call(admin, "GET", "/admin/audit?target=frank")
      expect(audit.json.map((a: { action: string }) => a.action).slice(0, 2)).toEqual(["user.enable", "user.disable"])
    })

    it("a quota lowered below what was spent refuses the key at once; raised, it serves again", async () => {
      const { admin, gateway } = await fresh()
      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "capped" })
      expect(await respond(gateway, issued.json.key)).toBe(200)
      const lowered = await call(admin, "PATCH", "/admin/keys/capped", { quota_usd: "0.000001" })
      expect(lowered.json.status).toBe("quota_exhausted")
      expect(await respond(gateway, issued.json.key)).not.toBe(200)
      const raised = await call(admin, "PATCH", "/admin/keys/capped", { quota_usd: null, concurrency: 2 })
      expect(raised.json).toMatchObject({ status: "active", quota_usd: null, concurrency: 2 })
      expect(await respond(gateway, issued.json.key)).toBe(200)
    })

    it("rpm/tpm limits: set on create, changed and cleared (null) on keys, users and groups; shown, audited, and in the principal", async () => {
      const db = await backend.fresh()
      const r = await start(db)
      running.push(r)
      const { admin } = r
      const group = await call(admin, "POST", "/admin/groups", { name: "rl", platform: "openai", rpm_limit: 600, tpm_limit: 100_000 })
      expect(group.json).toMatchObject({ name: "rl", rpm_limit: 600, tpm_limit: 100_000 })
      const user = await call(admin, "POST", "/admin/users", { name: "gina", balance_usd: 5, rpm_limit: 30 })
      expect(user.json).toMatchObject({ name: "gina", rpm_limit: 30, tpm_limit: null })
      const issued = await call(admin, "POST", "/admin/keys", { user: "gina", group: "rl", name: "limited", rpm_limit: 10, tpm_limit: 5000 })
      expect(issued.status).toBe(201)
      expect(issued.json).toMatchObject({ id: "limited", rpm_limit: 10, tpm_limit: 5000 })
      // Unset is null in every view.
      expect((await call(admin, "GET", "/admin/keys/from-file")).json).toMatchObject({ rpm_limit: null, tpm_limit: null })
      expect((await call(admin, "GET", "/admin/groups")).json.find((g: { name: string }) => g.name === "oa"))
        .toMatchObject({ rpm_limit: null, tpm_limit: null })
      expect(limitsOf(await principalOf(db, issued.json.key))).toEqual({ key: [10, 5000], user: [30, undefined], group: [600, 100_000] })

      for (const bad of [0, -1, 1.5, "10"]) {
        expectEnvelope(await call(admin, "POST", "/admin/keys", { user: "gina", group: "rl", rpm_limit: bad }), 400, "invalid_request")
        expectEnvelope(await call(admin, "PATCH", "/admin/users/gina", { tpm_limit: bad }), 400, "invalid_request")
      }

      expect((await call(admin, "PATCH", "/admin/keys/limited", { rpm_limit: null, tpm_limit: 6000 })).json)
        .toMatchObject({ rpm_limit: null, tpm_limit: 6000 })
      expect((await call(admin, "PATCH", "/admin/users/gina", { tpm_limit: 2000 })).json).toMatchObject({ rpm_limit: 30, tpm_limit: 2000 })
      expect((await call(admin, "PATCH", "/admin/groups/rl", { rpm_limit: null })).json).toMatchObject({ rpm_limit: null, tpm_limit: 100_000 })
      expect((await call(admin, "GET", "/admin/keys/limited")).json).toMatchObject({ rpm_limit: null, tpm_limit: 6000 })
      expect((await call(admin, "GET", "/admin/users/gina")).json).toMatchObject({ rpm_limit: 30, tpm_limit: 2000 })
      expect(limitsOf(await principalOf(db, issued.json.key))).toEqual({ key: [undefined, 6000], user: [30, 2000], group: [undefined, 100_000] })

      const keyAudit = await call(admin, "GET", "/admin/audit?target=limited")
      expect(keyAudit.json.map((a: { action: string }) => a.action)).toEqual(["key.update", "key.create"])
      expect(keyAudit.json[0].detail).toMatchObject({ rpm_limit: [10, null], tpm_limit: [5000, 6000] })
      expect(keyAudit.json[1].detail).toMatchObject({ rpm_limit: 10, tpm_limit: 5000 })
      const userAudit = await call(admin, "GET", "/admin/audit?target=gina")
      expect(userAudit.json[0]).toMatchObject({ action: "user.update", detail: { rpm_limit: [30, 30], tpm_limit: [null, 2000] } })
      const groupAudit = await call(admin, "GET", "/admin/audit?target=rl")
      expect(groupAudit.json.map((a: { action: string }) => a.action)).toEqual(["group.update", "group.create"])
      expect(groupAudit.json[0].detail).toEqual({ rpmLimit: null })
    })

    it("an rpm_limit set through the API holds the key's next request; cleared with null, the key serves again", async () => {
      const { admin, gateway } = await fresh()
      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "burst", rpm_limit: 1 })
      expect(await respond(gateway, issued.json.key)).toBe(200)
      expect(await respond(gateway, issued.json.key)).toBe(429)
      await call(admin, "PATCH", "/admin/keys/burst", { rpm_limit: null })
      expect(await respond(gateway, issued.json.key)).toBe(200)
    })

    it("rpm/tpm limits of what the config file names: keys and groups are the file's (409); a file user's come back from the file at the next start", async () => {
      const db = await backend.fresh()
      const r = await start(db)
      running.push(r)
      const { admin } = r
      expectEnvelope(await call(admin, "PATCH", "/admin/keys/from-file", { rpm_limit: 5 }), 409, "managed_by_config")
      expectEnvelope(await call(admin, "PATCH", "/admin/groups/oa", { tpm_limit: 5 }), 409, "managed_by_config")
      // Like its concurrency, a file user's limits may be changed here, until the file is applied again.
      expect((await call(admin, "PATCH", "/admin/users/erin", { rpm_limit: 5, tpm_limit: 500 })).json)
        .toMatchObject({ in_config: true, rpm_limit: 5, tpm_limit: 500 })
      expect(limitsOf(await principalOf(db, "sk-admin-config-key-0001"))?.user).toEqual([5, 500])

      // A start with a file naming limits: the file's values (an absent one: no limit) replace the operator's.
      const config = {
        ...adminGatewayConfig,
        groups: adminGatewayConfig.groups.map((g) => (g.name === "oa" ? { ...g, rpm_limit: 120 } : g)),
        users: adminGatewayConfig.users.map((u) => ({ ...u, rpm_limit: 60 })),
        keys: adminGatewayConfig.keys.map((k) => ({ ...k, tpm_limit: 7000 }))
      }
      expect(limitsOf(await principalOf(db, "sk-admin-config-key-0001", config)))
        .toEqual({ key: [undefined, 7000], user: [60, undefined], group: [120, undefined] })
      expect((await call(admin, "GET", "/admin/users/erin")).json).toMatchObject({ rpm_limit: 60, tpm_limit: null })
      expect((await call(admin, "GET", "/admin/keys/from-file")).json).toMatchObject({ rpm_limit: null, tpm_limit: 7000 })
    })

    it("websocket: a group added with it off, turned on and off again; shown (default true), audited, and in the principal", async () => {
      const db = await backend.fresh()
      const r = await start(db)
      running.push(r)
      const { admin } = r
      const off = await call(admin, "POST", "/admin/groups", { name: "http-only", platform: "openai", websocket: false })
      expect(off.status).toBe(201)
      expect(off.json).toMatchObject({ name: "http-only", websocket: false, in_config: false })
      const plain = await call(admin, "POST", "/admin/groups", { name: "ws-default", platform: "openai" })
      expect(plain.json).toMatchObject({ name: "ws-default", websocket: true })
      const groups = (await call(admin, "GET", "/admin/groups")).json as Array<{ name: string; websocket: boolean }>
      expect(Object.fromEntries(groups.map((g) => [g.name, g.websocket])))
        .toMatchObject({ oa: true, an: true, "team-sub": true, "http-only": false, "ws-default": true })
      for (const bad of ["yes", 1, null]) {
        expectEnvelope(await call(admin, "POST", "/admin/groups", { name: "bad-ws", platform: "openai", websocket: bad }), 400, "invalid_request")
        expectEnvelope(await call(admin, "PATCH", "/admin/groups/http-only", { websocket: bad }), 400, "invalid_request")
      }

      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "http-only", name: "ws-key" })
      expect(issued.status).toBe(201)
      expect((await principalOf(db, issued.json.key))?.group.websocket).toBe(false)
      expect((await principalOf(db, "sk-admin-config-key-0001"))?.group.websocket).toBe(true)

      expect((await call(admin, "PATCH", "/admin/groups/http-only", { websocket: true })).json).toMatchObject({ websocket: true })
      expect((await principalOf(db, issued.json.key))?.group.websocket).toBe(true)
      // A change of something else leaves it.
      expect((await call(admin, "PATCH", "/admin/groups/http-only", { rpm_limit: 10 })).json).toMatchObject({ websocket: true, rpm_limit: 10 })
      expect((await call(admin, "PATCH", "/admin/groups/http-only", { websocket: false })).json).toMatchObject({ websocket: false, rpm_limit: 10 })
      expect((await principalOf(db, issued.json.key))?.group.websocket).toBe(false)

      const audit = await call(admin, "GET", "/admin/audit?target=http-only")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual(["group.update", "group.update", "group.update", "group.create"])
      expect(audit.json.map((a: { detail: unknown }) => a.detail)).toEqual([
        { websocket: false },
        { rpmLimit: 10 },
        { websocket: true },
        expect.objectContaining({ name: "http-only", websocket: false })
      ])
    })

    it("websocket of a group the config file names is the file's (409); a start with the file's false turns it off", async () => {
      const db = await backend.fresh()
      const r = await start(db)
      running.push(r)
      const { admin } = r
      expectEnvelope(await call(admin, "PATCH", "/admin/groups/oa", { websocket: false }), 409, "managed_by_config")
      expect((await call(admin, "GET", "/admin/groups")).json.find((g: { name: string }) => g.name === "oa")).toMatchObject({ websocket: true })

      const config = { ...adminGatewayConfig, groups: adminGatewayConfig.groups.map((g) => (g.name === "oa" ? { ...g, websocket: false } : g)) }
      expect((await principalOf(db, "sk-admin-config-key-0001", config))?.group.websocket).toBe(false)
      expect((await call(admin, "GET", "/admin/groups")).json.find((g: { name: string }) => g.name === "oa"))
        .toMatchObject({ websocket: false, in_config: true })
    })

    it("allow_provider_tools: a group added with web_search, changed, shown (default none), in the principal; unknown names refused", async () => {
      const db = await backend.fresh()
      const r = await start(db)
      running.push(r)
      const { admin } = r
      const added = await call(admin, "POST", "/admin/groups", { name: "searchers", platform: "openai", allow_provider_tools: ["web_search"] })
      expect(added.status).toBe(201)
      expect(added.json).toMatchObject({ name: "searchers", allow_provider_tools: ["web_search"] })
      expect((await call(admin, "POST", "/admin/groups", { name: "plain-tools", platform: "openai" })).json)
        .toMatchObject({ allow_provider_tools: [] })
      for (const bad of [["web_browse"], "web_search", null]) {
        expectEnvelope(await call(admin, "POST", "/admin/groups", { name: "bad-tools", platform: "openai", allow_provider_tools: bad }), 400, "invalid_request")
        expectEnvelope(await call(admin, "PATCH", "/admin/groups/searchers", { allow_provider_tools: bad }), 400, "invalid_request")
      }

      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "searchers", name: "search-key" })
      expect((await principalOf(db, issued.json.key))?.group.allowProviderTools).toEqual(["web_search"])
      // A change of something else leaves it; an empty list takes every tool away.
      expect((await call(admin, "PATCH", "/admin/groups/searchers", { rpm_limit: 10 })).json).toMatchObject({ allow_provider_tools: ["web_search"] })
      expect((await call(admin, "PATCH", "/admin/groups/searchers", { allow_provider_tools: ["web_search", "code_interpreter"] })).json)
        .toMatchObject({ allow_provider_tools: ["web_search", "code_interpreter"] })
      expect((await principalOf(db, issued.json.key))?.group.allowProviderTools).toEqual(["web_search", "code_interpreter"])
      expect((await call(admin, "PATCH", "/admin/groups/searchers", { allow_provider_tools: [] })).json).toMatchObject({ allow_provider_tools: [] })
      expect((await principalOf(db, issued.json.key))?.group.allowProviderTools).toEqual([])
    })

    it("lists the upstream accounts with their health, takes one out and reinstates it (audited)", async () => {
      const { admin, gateway } = await fresh()
      const accounts = await call(admin, "GET", "/admin/accounts")
      expect(accounts.json.map((a: { name: string; health: string; in_use: number }) => [a.name, a.health, a.in_use])).toEqual([
        ["sim-oa", "ok", 0],
        ["sim-an", "ok", 0]
      ])
      expect(JSON.stringify(accounts.json)).not.toMatch(/secret|api_key/i)
      expectEnvelope(await call(admin, "POST", "/admin/accounts/nope/reinstate"), 404, "account_not_found")
      // Taken out, the group's only account serves nothing; reinstated, it serves again.
      expect((await call(admin, "POST", "/admin/accounts/sim-oa/take-out")).json.health).toBe("taken_out")
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(503)
      const back = await call(admin, "POST", "/admin/accounts/sim-oa/reinstate")
      expect(back.json).toMatchObject({ name: "sim-oa", health: "ok", cooling_down_until: null })
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)
      expectEnvelope(await call(admin, "POST", "/admin/accounts/nope/take-out"), 404, "account_not_found")
      const audit = await call(admin, "GET", "/admin/audit?target=sim-oa")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual(["account.reinstate", "account.take_out"])
    })

    it("subscriptions: created, suspended and restored live; only for subscription groups", async () => {
      const { admin, gateway } = await fresh()
      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "team-sub", name: "sub-key" })
      expect(await respond(gateway, issued.json.key)).not.toBe(200) // no subscription yet
      expectEnvelope(await call(admin, "PUT", "/admin/subscriptions/erin/oa", {}), 400, "not_a_subscription_group")
      expectEnvelope(await call(admin, "PUT", "/admin/subscriptions/nobody/team-sub", {}), 404, "user_not_found")
      expectEnvelope(await call(admin, "PUT", "/admin/subscriptions/erin/team-sub", { status: "paused" }), 400, "invalid_request")

      const created = await call(admin, "PUT", "/admin/subscriptions/erin/team-sub", { expires_at: "2099-01-01T00:00:00Z" })
      expect(created.json).toMatchObject({ user: "erin", group: "team-sub", status: "active", expires_at: "2099-01-01T00:00:00.000Z", in_config: false })
      expect(await respond(gateway, issued.json.key)).toBe(200)
      expect((await call(admin, "PUT", "/admin/subscriptions/erin/team-sub", { status: "suspended" })).json.status).toBe("suspended")
      expect(await respond(gateway, issued.json.key)).not.toBe(200)
      expect((await call(admin, "PUT", "/admin/subscriptions/erin/team-sub", { status: "active" })).json.status).toBe("active")
      expect(await respond(gateway, issued.json.key)).toBe(200)

      const listed = await call(admin, "GET", "/admin/subscriptions?user=erin")
      expect(listed.json).toHaveLength(1)
      expect(listed.json[0].daily_used_usd).toBeGreaterThan(0)
      const audit = await call(admin, "GET", "/admin/audit?target=erin/team-sub")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual([
        "subscription.update",
        "subscription.update",
        "subscription.create"
      ])
    })

    it("prices set through the API apply to the next settlement; the file's are the file's", async () => {
      const { admin, gateway } = await fresh()
      const listed = await call(admin, "GET", "/admin/prices")
      expect(listed.json).toEqual([{ model: "gpt-5.4-mini", input: 1, output: 2, cache_read: 1, cache_write: 1, in_config: true }])
      expectEnvelope(await call(admin, "PUT", "/admin/prices/gpt-5.4-mini", { input: 5, output: 5 }), 409, "managed_by_config")
      expectEnvelope(await call(admin, "DELETE", "/admin/prices/gpt-5.4-mini"), 409, "managed_by_config")
      expectEnvelope(await call(admin, "PUT", "/admin/prices/a*b", { input: 1, output: 1 }), 400, "invalid_model")
      expectEnvelope(await call(admin, "PUT", "/admin/prices/house", { input: -1, output: 1 }), 400, "invalid_request")

      const set = await call(admin, "PUT", "/admin/prices/gpt-5.4", { input: 1000, output: 2000 })
      expect(set.json).toEqual({ model: "gpt-5.4", input: 1000, output: 2000, cache_read: 1000, cache_write: 1000, in_config: false })
      const issued = await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "priced" })
      const res = await fetch(`${gateway}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${issued.json.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "price me" })
      })
      const usage = ((await res.json()) as { usage: { input_tokens: number; output_tokens: number; input_tokens_details: { cached_tokens: number } } }).usage
      expect(usage.input_tokens_details.cached_tokens).toBe(0)
      // 1000 and 2000 USD per million tokens: 1000 and 2000 micro-dollars per token.
      const expected = (usage.input_tokens * 1000 + usage.output_tokens * 2000) / 1e6
      expect((await call(admin, "GET", "/admin/keys/priced")).json.quota_used_usd).toBeCloseTo(expected, 9)

      expect((await call(admin, "DELETE", "/admin/prices/gpt-5.4")).status).toBe(204)
      expectEnvelope(await call(admin, "DELETE", "/admin/prices/gpt-5.4"), 404, "price_not_found")
      const audit = await call(admin, "GET", "/admin/audit?target=gpt-5.4")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual(["price.delete", "price.create"])
    })

    it("an operator's price, account and disabled user outlive a restart (the config file is synced again)", async () => {
      const db = await backend.fresh()
      const first = await start(db)
      await call(first.admin, "PUT", "/admin/prices/house-model", { input: 3, output: 4 })
      await call(first.admin, "POST", "/admin/accounts", { name: "kept-oa", platform: "openai", kind: "simulator", groups: ["oa"] })
      await call(first.admin, "POST", "/admin/users/erin/disable")
      await first.close()
      const second = await start(db)
      running.push(second)
      const prices = await call(second.admin, "GET", "/admin/prices")
      expect(prices.json.map((p: { model: string; in_config: boolean }) => [p.model, p.in_config])).toEqual([
        ["gpt-5.4-mini", true],
        ["house-model", false]
      ])
      expect((await call(second.admin, "GET", "/admin/users/erin")).json.disabled).toBe(true)
      expect((await call(second.admin, "GET", "/admin/accounts")).json.map((a: { name: string }) => a.name)).toEqual(["sim-oa", "sim-an", "kept-oa"])
      expect(await respond(second.gateway, "sk-admin-config-key-0001")).toBe(401)
    })

    it("an account added through the API is picked at once; changed and removed live; the file's are the file's", async () => {
      const { admin, gateway } = await fresh()
      expectEnvelope(
        await call(admin, "POST", "/admin/accounts", { name: "x", platform: "anthropic", kind: "simulator", groups: ["oa"] }),
        400,
        "platform_mismatch"
      )
      expectEnvelope(await call(admin, "POST", "/admin/accounts", { name: "x", platform: "openai", groups: ["oa"] }), 400, "missing_account_key")
      expectEnvelope(
        await call(admin, "POST", "/admin/accounts", { name: "x", platform: "openai", groups: ["oa"], api_key_env: "MODELGATE_TEST_UNSET_VAR" }),
        400,
        "api_key_env_not_allowed"
      )
      expectEnvelope(await call(admin, "POST", "/admin/accounts", { name: "sim-oa", platform: "openai", kind: "simulator", groups: ["oa"] }), 409, "account_exists")

      const added = await call(admin, "POST", "/admin/accounts", { name: "extra-oa", platform: "openai", kind: "simulator", groups: ["oa"], concurrency: 4 })
      expect(added.status).toBe(201)
      expect(added.json).toMatchObject({ name: "extra-oa", health: "ok", concurrency: 4, groups: ["oa"] })
      expect(JSON.stringify(added.json)).not.toMatch(/api_key|secret/i)
      // The file's account out of rotation: the group is served by the one just added.
      await call(admin, "POST", "/admin/accounts/sim-oa/take-out")
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)

      expect((await call(admin, "PATCH", "/admin/accounts/extra-oa", { concurrency: 2, priority: 5 })).json).toMatchObject({ concurrency: 2, priority: 5 })
      expectEnvelope(await call(admin, "PATCH", "/admin/accounts/sim-oa", { concurrency: 2 }), 409, "managed_by_config")
      expectEnvelope(await call(admin, "DELETE", "/admin/accounts/sim-oa"), 409, "managed_by_config")

      expect((await call(admin, "DELETE", "/admin/accounts/extra-oa")).status).toBe(204)
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(503) // nothing left to serve the group
      expectEnvelope(await call(admin, "PATCH", "/admin/accounts/extra-oa", { concurrency: 2 }), 404, "account_not_found")
      const audit = await call(admin, "GET", "/admin/audit?target=extra-oa")
      expect(audit.json.map((a: { action: string }) => a.action)).toEqual(["account.remove", "account.update", "account.create"])
    })

    it("a group added through the API, with an account and a key, serves at once; its model list changes live", async () => {
      const { admin, gateway } = await fresh()
      const group = await call(admin, "POST", "/admin/groups", { name: "team-x", platform: "openai", models: ["gpt-5.4"], moderation: "off" })
      expect(group.status).toBe(201)
      expect(group.json).toMatchObject({ name: "team-x", platform: "openai", billing: "balance", models: ["gpt-5.4"], in_config: false })
      expectEnvelope(await call(admin, "POST", "/admin/groups", { name: "team-x", platform: "openai" }), 409, "group_exists")
      expectEnvelope(await call(admin, "PATCH", "/admin/groups/oa", { models: ["gpt-5.4"] }), 409, "managed_by_config")
      expectEnvelope(await call(admin, "PATCH", "/admin/groups/nope", { moderation: "off" }), 404, "group_not_found")

      await call(admin, "POST", "/admin/accounts", { name: "team-x-sim", platform: "openai", kind: "simulator", groups: ["team-x"] })
      const key = (await call(admin, "POST", "/admin/keys", { user: "erin", group: "team-x" })).json.key as string
      expect(await respond(gateway, key, "gpt-5.4")).toBe(200)
      expect(await respond(gateway, key, "gpt-5.4-mini")).toBe(404) // not in the group's list
      expect((await call(admin, "PATCH", "/admin/groups/team-x", { models: ["gpt-5.4", "gpt-5.4-mini"] })).json.models).toEqual(["gpt-5.4", "gpt-5.4-mini"])
      expect(await respond(gateway, key, "gpt-5.4-mini")).toBe(200)
    })

    it("keys from the config file may be disabled, and nothing else", async () => {
      const { admin, gateway } = await fresh()
      expectEnvelope(await call(admin, "PATCH", "/admin/keys/from-file", { quota_usd: 1 }), 409, "managed_by_config")
      expectEnvelope(await call(admin, "POST", "/admin/keys/from-file/rotate"), 409, "managed_by_config")
      expectEnvelope(await call(admin, "DELETE", "/admin/keys/from-file"), 409, "managed_by_config")
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(200)
      expect((await call(admin, "POST", "/admin/keys/from-file/disable")).json.disabled_by).toBe("admin-api")
      expect(await respond(gateway, "sk-admin-config-key-0001")).toBe(401)
    })

    it("reports usage per model, key, user, group and day, as JSON and as CSV", async () => {
      const { admin, gateway } = await fresh()
      const a = await call(admin, "POST", "/admin/keys", { user: "erin", group: "oa", name: "a" })
      const b = await call(admin, "POST", "/admin/keys", { user: "erin", group: "an", name: "b" })
      expect(await respond(gateway, a.json.key)).toBe(200)
      expect(await respond(gateway, a.json.key, "gpt-5.4-mini")).toBe(200)
      expect(await respond(gateway, b.json.key, "claude-sonnet-4-6")).toBe(200)

      const byModel = await call(admin, "GET", "/admin/usage")
      expect(byModel.json.by).toBe("model")
      expect(byModel.json.rows.map((r: { bucket: string }) => r.bucket)).toEqual(["claude-sonnet-4-6", "gpt-5.4", "gpt-5.4-mini"])
      const byGroup = await call(admin, "GET", "/admin/usage?by=group")
      expect(byGroup.json.rows.map((r: { bucket: string; requests: number }) => [r.bucket, r.requests])).toEqual([["an", 1], ["oa", 2]])
      const byKey = await call(admin, "GET", "/admin/usage?by=key&group=oa")
      expect(byKey.json.rows.map((r: { bucket: string }) => r.bucket)).toEqual(["a"])
      const today = new Date().toISOString().slice(0, 10)
      const byDay = await call(admin, "GET", `/admin/usage?by=day&start_date=${today}&end_date=${today}`)
      expect(byDay.json.rows).toHaveLength(1)
      expect(byDay.json.rows[0].requests).toBe(3)
      const total = byModel.json.rows.reduce((n: number, r: { cost_usd: number }) => n + r.cost_usd, 0)
      expect(byDay.json.rows[0].cost_usd).toBeCloseTo(total, 9)
      expectEnvelope(await call(admin, "GET", "/admin/usage?by=planet"), 400, "invalid_request")
      expectEnvelope(await call(admin, "GET", "/admin/usage?start_date=2026-02-30"), 400, "invalid_request")
      expectEnvelope(await call(admin, "GET", "/admin/usage?start_date=2026-03-02&end_date=2026-03-01"), 400, "invalid_date")

      const csv = await call(admin, "GET", "/admin/usage.csv?by=user")
      expect(csv.status).toBe(200)
      expect(csv.contentType).toContain("text/csv")
      const lines = csv.text.trimEnd().split("\r\n")
      expect(lines[0]).toBe("user,requests,input_tokens,output_tokens,cache_read_tokens,cache_creation_tokens,cost_usd")
      expect(lines[1]).toMatch(/^erin,3,\d+,\d+,\d+,\d+,\d+\.\d+$/)
    })
  })
}
