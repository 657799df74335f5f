/**
 * The store's behaviour, the same for every backend: schema and config sync, exact and
 * exactly-once settlement (also 200 at once), eligibility, the usage rollups at day boundaries,
 * restarts, shutdown flush and the open-request markers.
 */
import { SqlClient } from "effect/sql"
import { Cause, Clock, Effect, Exit, Fiber, Layer, Logger, Option, References } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sha256Hex } from "../../src/config/resolve.js"
import type { Principal } from "../../src/domain/model.js"
import { costMicros } from "../../src/domain/pricing.js"
import { emptyUsage, type TokenUsage } from "../../src/domain/usage.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import type { Settlement } from "../../src/domain/settlement.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { sqlClientLayer } from "../../src/store/client.js"
import { migrate } from "../../src/store/migrate.js"
import { migrations } from "../../src/store/migrations.js"
import { usageBreakdown } from "../../src/store/admin/usage.js"
import { dayOf } from "../../src/domain/usageReport.js"
import { Store } from "../../src/store/Store.js"
import { type Backend, dataOf, openStore, type StoreServices, type TestDatabase } from "./harness.js"

type Runtime = ReturnType<typeof openStore>

const past = new Date(Date.now() - 86_400_000).toISOString()
const future = new Date(Date.now() + 30 * 86_400_000).toISOString()

export const storeConfig = (overrides: { balanceAlice?: number; keys?: ReadonlyArray<Record<string, unknown>> } = {}) => ({
  groups: [
    { name: "paid", platform: "openai", rate_multiplier: 1.5 },
    { name: "plain", platform: "openai" },
    { name: "sub-daily", platform: "anthropic", billing: "subscription", daily_limit_usd: 1 },
    { name: "sub-weekly", platform: "anthropic", billing: "subscription", weekly_limit_usd: 0.5 },
    { name: "sub-monthly", platform: "anthropic", billing: "subscription", monthly_limit_usd: 0.5 }
  ],
  users: [
    { name: "alice", balance_usd: overrides.balanceAlice ?? 100 },
    { name: "bob", balance_usd: 0 },
    { name: "carol" },
    { name: "dave" }
  ],
  keys: overrides.keys ?? [
    { key: "sk-store-alice-paid", user: "alice", group: "paid", name: "alice-paid" },
    { key: "sk-store-alice-plain", user: "alice", group: "plain", name: "alice-plain", quota_usd: 0.01 },
    { key: "sk-store-bob-plain", user: "bob", group: "plain", name: "bob-plain" },
    { key: "sk-store-carol-daily", user: "carol", group: "sub-daily", name: "carol-daily" },
    { key: "sk-store-carol-weekly", user: "carol", group: "sub-weekly", name: "carol-weekly" },
    { key: "sk-store-carol-monthly", user: "carol", group: "sub-monthly", name: "carol-monthly" },
    { key: "sk-store-dave-daily", user: "dave", group: "sub-daily", name: "dave-daily" },
    { key: "sk-store-dave-weekly", user: "dave", group: "sub-weekly", name: "dave-weekly" },
    { key: "sk-store-dave-monthly", user: "dave", group: "sub-monthly", name: "dave-monthly" }
  ],
  subscriptions: [
    { user: "carol", group: "sub-daily" },
    { user: "carol", group: "sub-weekly" },
    { user: "carol", group: "sub-monthly", starts_at: past, expires_at: future },
    { user: "dave", group: "sub-weekly", expires_at: past },
    { user: "dave", group: "sub-monthly", status: "suspended" }
  ],
  prices: [
    { model: "house-model", input: 0.1, output: 0.3, cache_read: 0.01 },
    { model: "fam-*", input: 2, output: 8 },
    { model: "round-*", input: 1.15, output: 1.15 }
  ]
})

const run = <A, E>(rt: Runtime, effect: Effect.Effect<A, E, StoreServices>) => rt.runPromise(effect)

const principal = (rt: Runtime, key: string): Promise<Principal> =>
  run(rt, Effect.flatMap(KeyRepo, (r) => r.findByHash(sha256Hex(key)))).then((p) => Option.getOrThrow(p))

const usage = (partial: Partial<TokenUsage>): TokenUsage => ({ ...emptyUsage, ...partial })

const settlement = (requestId: string, p: Principal, model: string, u: TokenUsage, at = new Date()): Settlement => ({
  requestId,
  principal: p,
  model,
  usage: u,
  at
})

/** What the settlement charged, in full; `settle` is its cost. */
const settleCharged = (rt: Runtime, s: Settlement) => run(rt, Effect.flatMap(Quota, (q) => q.settle(s)))
const settle = (rt: Runtime, s: Settlement) => settleCharged(rt, s).then((c) => c.cost)

/** The typed failure of a check, or "ok"; at `atMillis` on a test clock when given. */
const check = async (rt: Runtime, p: Principal, atMillis?: number) => {
  const checking = Effect.flatMap(Quota, (q) => q.check(p, "gpt-5.4"))
  let clock: TestClock.TestClock | undefined
  if (atMillis !== undefined) {
    clock = await Effect.runPromise(Effect.scoped(TestClock.make()))
    await Effect.runPromise(clock.setTime(atMillis))
  }
  return rt.runPromiseExit(clock === undefined ? checking : Effect.provideService(checking, Clock.Clock, clock)).then((exit) => {
    if (Exit.isSuccess(exit)) return "ok" as const
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isNone(failure)) throw new Error(Cause.pretty(exit.cause))
    return failure.value
  })
}

const query = <A extends object>(rt: Runtime, text: string) =>
  run(rt, Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)))

const num = (v: unknown) => Number(v)

const one = async (rt: Runtime, text: string): Promise<number> => {
  const rows = await query<Record<string, unknown>>(rt, text)
  return num(Object.values(rows[0] ?? {})[0])
}

export const storeSuite = (makeBackend: () => Backend) => {
  let backend: Backend
  const runtimes: Array<Runtime> = []
  const fresh = (): Promise<TestDatabase> => backend.fresh()
  const open = (db: TestDatabase, config: unknown = storeConfig(), options = {}, logger?: Layer.Layer<never>) => {
    const rt = openStore(db, dataOf(config), options, logger)
    runtimes.push(rt)
    return rt
  }

  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(async () => {
    for (const rt of runtimes) await rt.dispose().catch(() => undefined)
    await backend.cleanup()
  })

  describe("schema and config sync", () => {
    it("migrations are versioned and idempotent", async () => {
      const db = await fresh()
      const rt = open(db)
      await principal(rt, "sk-store-alice-paid")
      expect(await run(rt, migrate())).toEqual([])
      await rt.dispose()
      const again = open(db)
      await principal(again, "sk-store-alice-paid")
      const versions = await query<{ version: unknown }>(again, "SELECT version FROM modelgate_migrations")
      expect(versions.map((v) => num(v.version))).toEqual(migrations.map((m) => m.version))
    })

    it("a database at the first schema version keeps its usage rows when migrated, as reported usage", async () => {
      const db = await fresh()
      const first = migrations.filter((m) => m.version === 1)
      await Effect.runPromise(
        Effect.gen(function*() {
          yield* migrate(first)
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO usage_events (request_id, key_id, user_name, group_name, model, day, at,
            input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, reasoning_tokens, cost_micros, charged_to)
            VALUES ('r-old', 'k', 'u', 'g', 'm', '2026-01-01', 1, 10, 5, 0, 0, 0, 42, 'balance')`
        }).pipe(Effect.provide(sqlClientLayer(db.target)))
      )
      const rt = open(db)
      await principal(rt, "sk-store-alice-paid")
      expect(await one(rt, "SELECT COUNT(*) FROM usage_events")).toBe(1)
      expect(await one(rt, "SELECT cost_micros FROM usage_events WHERE request_id = 'r-old'")).toBe(42)
      expect(await one(rt, "SELECT estimated FROM usage_events WHERE request_id = 'r-old'")).toBe(0)
      expect(await one(rt, "SELECT price_fallback FROM usage_events WHERE request_id = 'r-old'")).toBe(0)
    })

    it("stores keys hashed, never the key itself", async () => {
      const db = await fresh()
      const rt = open(db)
      const rows = await query<Record<string, unknown>>(rt, "SELECT * FROM api_keys")
      expect(rows.length).toBe(9)
      const dump = JSON.stringify(rows)
      expect(dump).not.toContain("sk-store-alice-paid")
      const alice = rows.find((r) => r["id"] === "alice-paid")
      expect(alice?.["hash"]).toBe(sha256Hex("sk-store-alice-paid"))
      expect(String(alice?.["prefix"])).toMatch(/…$/)
    })

    it("creates and updates by name; a key removed from the file is disabled, not deleted", async () => {
      const db = await fresh()
      const first = open(db)
      await settle(first, settlement("r-sync-1", await principal(first, "sk-store-alice-paid"), "gpt-5.4", usage({ outputTokens: 1000 })))
      await first.dispose()

      const keys = [
        { key: "sk-store-alice-paid", user: "alice", group: "paid", name: "alice-paid", quota_usd: 5 },
        { key: "sk-store-new", user: "bob", group: "plain", name: "bob-new" }
      ]
      const second = open(db, storeConfig({ keys }))
      const rows = await query<{ id: string; status: string; disabled_by: string | null; quota_micros: unknown }>(
        second,
        "SELECT id, status, disabled_by, quota_micros FROM api_keys ORDER BY id"
      )
      expect(rows.length).toBe(10)
      const byId = new Map(rows.map((r) => [r.id, r]))
      expect(byId.get("alice-paid")).toMatchObject({ status: "active" })
      expect(num(byId.get("alice-paid")?.quota_micros)).toBe(5_000_000)
      expect(byId.get("bob-new")).toMatchObject({ status: "active" })
      expect(byId.get("bob-plain")).toMatchObject({ status: "disabled", disabled_by: "removed" })
      // History stays: the event and the rollup of the settled request are still there.
      expect(await one(second, "SELECT COUNT(*) FROM usage_events")).toBe(1)
      expect(await one(second, "SELECT SUM(requests) FROM usage_daily")).toBe(1)
      const removed = await run(second, Effect.flatMap(KeyRepo, (r) => r.findByHash(sha256Hex("sk-store-bob-plain"))))
      expect(Option.getOrThrow(removed).key.status).toBe("disabled")
      await second.dispose()

      const third = open(db)
      expect((await principal(third, "sk-store-bob-plain")).key.status).toBe("active")
    })

    it("carries the file's rpm/tpm limits of keys, users and groups into the principal; one the file drops is gone at the next start", async () => {
      const db = await fresh()
      const config = storeConfig()
      const limited = {
        ...config,
        groups: config.groups.map((g) => (g.name === "paid" ? { ...g, rpm_limit: 600, tpm_limit: 1_000_000 } : g)),
        users: config.users.map((u) => (u.name === "alice" ? { ...u, tpm_limit: 50_000 } : u)),
        keys: config.keys.map((k) => (k.name === "alice-paid" ? { ...k, rpm_limit: 10, tpm_limit: 3_000_000_000 } : k))
      }
      const first = open(db, limited)
      const p = await principal(first, "sk-store-alice-paid")
      expect(p.key).toMatchObject({ rpmLimit: 10, tpmLimit: 3_000_000_000 })
      expect(p.user).toMatchObject({ tpmLimit: 50_000 })
      expect(p.user.rpmLimit).toBeUndefined()
      expect(p.group).toMatchObject({ rpmLimit: 600, tpmLimit: 1_000_000 })
      // Another key of the same user and another group: the user's limits, none of the key's or group's.
      const plain = await principal(first, "sk-store-alice-plain")
      expect(plain.user.tpmLimit).toBe(50_000)
      expect([plain.key.rpmLimit, plain.key.tpmLimit, plain.group.rpmLimit, plain.group.tpmLimit]).toEqual([undefined, undefined, undefined, undefined])
      await first.dispose()

      const second = open(db, config)
      const again = await principal(second, "sk-store-alice-paid")
      expect([again.key.rpmLimit, again.key.tpmLimit, again.user.tpmLimit, again.group.rpmLimit, again.group.tpmLimit])
        .toEqual([undefined, undefined, undefined, undefined, undefined])
    })

    it("carries the file's websocket switch of a group into the principal (absent: allowed); turned back on at the next start", async () => {
      const db = await fresh()
      const config = storeConfig()
      const off = { ...config, groups: config.groups.map((g) => (g.name === "paid" ? { ...g, websocket: false } : g)) }
      const first = open(db, off)
      expect((await principal(first, "sk-store-alice-paid")).group.websocket).toBe(false)
      expect((await principal(first, "sk-store-alice-plain")).group.websocket).toBe(true)
      expect(await one(first, "SELECT websocket FROM groups WHERE name = 'paid'")).toBe(0)
      await first.dispose()

      const second = open(db, config)
      expect((await principal(second, "sk-store-alice-paid")).group.websocket).toBe(true)
      expect(await one(second, "SELECT websocket FROM groups WHERE name = 'paid'")).toBe(1)
    })

    it("carries the file's allow_provider_tools of a group into the principal (absent: none); removed at the next start", async () => {
      const db = await fresh()
      const config = storeConfig()
      const allowed = { ...config, groups: config.groups.map((g) => (g.name === "paid" ? { ...g, allow_provider_tools: ["web_search", "file_search"] } : g)) }
      const first = open(db, allowed)
      expect((await principal(first, "sk-store-alice-paid")).group.allowProviderTools).toEqual(["web_search", "file_search"])
      expect((await principal(first, "sk-store-alice-plain")).group.allowProviderTools).toEqual([])
      await first.dispose()

      const second = open(db, config)
      expect((await principal(second, "sk-store-alice-paid")).group.allowProviderTools).toEqual([])
      expect(await query(second, "SELECT provider_tools FROM groups WHERE name = 'paid'")).toEqual([{ provider_tools: null }])
    })

    it("a group written before migration 9 allows the WebSocket transport once migrated", async () => {
      const db = await fresh()
      await Effect.runPromise(
        Effect.gen(function*() {
          yield* migrate(migrations.filter((m) => m.version < 9))
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO groups (name, platform, billing, allow_image_generation, rate_multiplier_ppm, models, moderation,
            in_config, updated_at) VALUES ('older', 'openai', 'balance', 0, 1000000, NULL, 'off', 0, 1)`
        }).pipe(Effect.provide(sqlClientLayer(db.target)))
      )
      const rt = open(db)
      await principal(rt, "sk-store-alice-paid")
      expect(await one(rt, "SELECT websocket FROM groups WHERE name = 'older'")).toBe(1)
    })

    it("daily rollups written before migration 10 keep their totals, under no account", async () => {
      const db = await fresh()
      await Effect.runPromise(
        Effect.gen(function*() {
          yield* migrate(migrations.filter((m) => m.version < 10))
          const sql = yield* SqlClient.SqlClient
          yield* sql`INSERT INTO usage_daily (key_id, day, model, requests, input_tokens, output_tokens, cache_read_tokens,
            cache_creation_tokens, cost_micros) VALUES ('alice-paid', '2026-01-01', 'gpt-5.4', 3, 300, 30, 100, 0, 77)`
        }).pipe(Effect.provide(sqlClientLayer(db.target)))
      )
      const rt = open(db)
      const p = await principal(rt, "sk-store-alice-paid")
      expect(await one(rt, "SELECT requests FROM usage_daily WHERE key_id = 'alice-paid' AND account = ''")).toBe(3)
      // New usage of the same key, day and model lands beside it, under its account.
      await settle(rt, { ...settlement("r-after-10", p, "gpt-5.4", usage({ inputTokens: 10 })), account: "acct-a", at: new Date("2026-01-01T12:00:00Z") })
      expect(await one(rt, "SELECT COUNT(*) FROM usage_daily WHERE key_id = 'alice-paid' AND day = '2026-01-01'")).toBe(2)
      expect(await one(rt, "SELECT SUM(requests) FROM usage_daily WHERE key_id = 'alice-paid' AND day = '2026-01-01'")).toBe(4)
    })

    it("records the account that answered: on the usage event, and as a dimension of the operators' usage", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      const cached = usage({ inputTokens: 1000, cacheReadTokens: 800, outputTokens: 10 })
      await settle(rt, { ...settlement("r-acct-1", p, "gpt-5.4", cached), account: "acct-a" })
      await settle(rt, { ...settlement("r-acct-2", p, "gpt-5.4", usage({ inputTokens: 500, outputTokens: 10 })), account: "acct-a" })
      await settle(rt, { ...settlement("r-acct-3", p, "gpt-5.4", cached), account: "acct-b" })
      await settle(rt, settlement("r-acct-none", p, "gpt-5.4", usage({ inputTokens: 7 })))
      const events = await query<{ request_id: string; account: string | null }>(
        rt,
        "SELECT request_id, account FROM usage_events WHERE request_id LIKE 'r-acct-%' ORDER BY request_id"
      )
      expect(events).toEqual([
        { request_id: "r-acct-1", account: "acct-a" },
        { request_id: "r-acct-2", account: "acct-a" },
        { request_id: "r-acct-3", account: "acct-b" },
        { request_id: "r-acct-none", account: null }
      ])
      const today = dayOf(new Date())
      const rows = await run(rt, usageBreakdown({ by: "account", from: today, to: today }))
      expect(rows.map((r) => [r.bucket, r.requests, r.input_tokens, r.cache_read_tokens])).toEqual([
        ["", 1, 7, 0],
        ["acct-a", 2, 1500, 800],
        ["acct-b", 1, 1000, 800]
      ])
    })

    it("applies balance_usd only while the balance is untouched", async () => {
      const db = await fresh()
      const first = open(db)
      const cost = await settle(
        first,
        settlement("r-bal-1", await principal(first, "sk-store-alice-paid"), "house-model", usage({ outputTokens: 100_000 }))
      )
      expect(cost).toBe(45_000) // 100k x 0.3 $/M = 30_000 micros, x 1.5
      await first.dispose()

      const second = open(db, storeConfig({ balanceAlice: 500 }))
      expect(await one(second, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - 45_000)
      await second.dispose()

      // bob never spent: his balance follows the file.
      const config = storeConfig()
      const third = open(db, { ...config, users: config.users.map((u) => (u.name === "bob" ? { ...u, balance_usd: 7 } : u)) })
      expect(await one(third, "SELECT balance_micros FROM users WHERE name = 'bob'")).toBe(7_000_000)
    })
  })

  describe("settlement", () => {
    it("charges the exact cost: config prices (exact and prefix), cache prices, the group multiplier", async () => {
      const rt = open(await fresh())
      const paid = await principal(rt, "sk-store-alice-paid")
      const plain = await principal(rt, "sk-store-alice-plain")
      // 700k uncached x 0.1 + 200k read x 0.01 + 100k written x 0.1 (input price) + 10k out x 0.3 = 85_000; x 1.5
      const u = usage({ inputTokens: 1_000_000, cacheReadTokens: 200_000, cacheCreationTokens: 100_000, outputTokens: 10_000 })
      expect(await settle(rt, settlement("r-exact-1", paid, "house-model", u))).toBe(127_500)
      // prefix rule: 1000 x 2 + 500 x 8 = 6_000; x 1.5
      expect(await settle(rt, settlement("r-exact-2", paid, "fam-large", usage({ inputTokens: 1000, outputTokens: 500 })))).toBe(9_000)
      // 10 x 1.15 = 11.5 micros: a float gives 11.499999999999998 and rounds down; exact arithmetic rounds half up.
      expect(await settle(rt, settlement("r-exact-3", plain, "round-x", usage({ inputTokens: 10 })))).toBe(12)
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - 127_500 - 9_000 - 12)
      expect(await one(rt, "SELECT cost_micros FROM usage_events WHERE request_id = 'r-exact-1'")).toBe(127_500)
    })

    it("marks a settlement the gateway estimated, and only that one, as estimated", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      await settle(rt, settlement("r-reported", p, "gpt-5.4", usage({ inputTokens: 100, outputTokens: 10 })))
      await settle(rt, { ...settlement("r-estimated", p, "gpt-5.4", usage({ inputTokens: 100, outputTokens: 10 })), estimated: true })
      expect(await one(rt, "SELECT estimated FROM usage_events WHERE request_id = 'r-reported'")).toBe(0)
      expect(await one(rt, "SELECT estimated FROM usage_events WHERE request_id = 'r-estimated'")).toBe(1)
    })

    it("flags a settlement charged the fallback price (no override, not in the price package), and only that one", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      const u = usage({ inputTokens: 1000, outputTokens: 100 })
      expect(await settleCharged(rt, settlement("r-override", p, "house-model", u))).toEqual({ cost: 195, priceFallback: false })
      // gpt-5.4 from the package: 1000 x 2.5 + 100 x 15 = 4_000; x 1.5
      expect(await settleCharged(rt, settlement("r-package", p, "gpt-5.4", u))).toEqual({ cost: 6_000, priceFallback: false })
      // the fallback price: 1000 x 3 + 100 x 15 = 4_500; x 1.5
      expect(await settleCharged(rt, settlement("r-unknown", p, "who-knows-1", u))).toEqual({ cost: 6_750, priceFallback: true })
      // A repeat charges nothing and flags nothing.
      expect(await settleCharged(rt, settlement("r-unknown", p, "who-knows-1", u))).toEqual({ cost: 0, priceFallback: false })
      const rows = await query<{ request_id: string; price_fallback: unknown; cost_micros: unknown }>(
        rt,
        "SELECT request_id, price_fallback, cost_micros FROM usage_events ORDER BY request_id"
      )
      expect(rows.map((r) => [r.request_id, num(r.price_fallback), num(r.cost_micros)])).toEqual([
        ["r-override", 0, 195],
        ["r-package", 0, 6_000],
        ["r-unknown", 1, 6_750]
      ])
    })

    it("settles a request id exactly once, also when retried concurrently", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      const s = settlement("r-once", p, "gpt-5.4", usage({ inputTokens: 5000, outputTokens: 2000 }))
      const expected = costMicros("gpt-5.4", s.usage, 1.5)
      expect(await settle(rt, s)).toBe(expected)
      expect(await settle(rt, s)).toBe(0)
      const retries = await run(rt, Effect.all(Array.from({ length: 20 }, () => Effect.flatMap(Quota, (q) => q.settle({ ...s, requestId: "r-twice" }))), { concurrency: "unbounded" }))
      expect(retries.map((c) => c.cost).filter((c) => c > 0)).toEqual([expected])
      expect(await one(rt, "SELECT COUNT(*) FROM usage_events")).toBe(2)
      expect(await one(rt, "SELECT SUM(requests) FROM usage_daily")).toBe(2)
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - 2 * expected)
      expect(await one(rt, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-paid'")).toBe(2 * expected)
    })

    it("a settlement that fails part-way changes nothing, and its retry charges once", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      // The rollup insert (the last step) fails, after the event, balance and key rows were written.
      const sabotage = backend.name === "sqlite"
        ? ["CREATE TRIGGER boom BEFORE INSERT ON usage_daily BEGIN SELECT RAISE(ABORT, 'boom'); END"]
        : [
          "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$ LANGUAGE plpgsql",
          "CREATE TRIGGER boom BEFORE INSERT ON usage_daily FOR EACH ROW EXECUTE FUNCTION boom()"
        ]
      for (const statement of sabotage) await query(rt, statement)
      const s = settlement("r-atomic", p, "gpt-5.4", usage({ inputTokens: 1000, outputTokens: 100 }))
      const failed = await rt.runPromiseExit(Effect.flatMap(Quota, (q) => q.settle(s)))
      const error = Exit.isFailure(failed) ? Option.getOrNull(Cause.findErrorOption(failed.cause)) : null
      expect(error).toMatchObject({ _tag: "StoreError" })
      expect(await one(rt, "SELECT COUNT(*) FROM usage_events")).toBe(0)
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000)
      expect(await one(rt, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-paid'")).toBe(0)

      await query(rt, backend.name === "sqlite" ? "DROP TRIGGER boom" : "DROP TRIGGER boom ON usage_daily")
      const cost = costMicros("gpt-5.4", s.usage, 1.5)
      expect(await settle(rt, s)).toBe(cost)
      expect(await settle(rt, s)).toBe(0)
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - cost)
      expect(await one(rt, "SELECT SUM(requests) FROM usage_daily")).toBe(1)
    })

    it("200 concurrent settlements on one key add up to exactly the sum of their costs", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      const models = ["house-model", "gpt-5.4", "fam-a", "claude-sonnet-4-5"]
      const all = Array.from({ length: 200 }, (_, i) =>
        settlement(`r-par-${i}`, p, models[i % models.length]!, usage({
          inputTokens: 1000 + i * 37,
          cacheReadTokens: (i * 13) % 500,
          cacheCreationTokens: (i * 7) % 300,
          outputTokens: 200 + i * 11
        })))
      const data = dataOf(storeConfig())
      const expected = all.reduce((acc, s) => acc + costMicros(s.model, s.usage, 1.5, data.prices), 0)
      const charged = await run(rt, Effect.forEach(all, (s) => Effect.flatMap(Quota, (q) => q.settle(s)), { concurrency: "unbounded" }))
      expect(charged.reduce((a, b) => a + b.cost, 0)).toBe(expected)
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - expected)
      expect(await one(rt, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-paid'")).toBe(expected)
      expect(await one(rt, "SELECT SUM(cost_micros) FROM usage_daily WHERE key_id = 'alice-paid'")).toBe(expected)
      expect(await one(rt, "SELECT SUM(requests) FROM usage_daily WHERE key_id = 'alice-paid'")).toBe(200)
      expect(await one(rt, "SELECT COUNT(*) FROM usage_events")).toBe(200)
      const today = new Date().toISOString().slice(0, 10)
      const snap = await run(rt, Effect.flatMap(Quota, (q) => q.snapshot(p, { from: today, to: today }, new Date())))
      expect(snap.total.costMicros).toBe(expected)
      expect(snap.total.requests).toBe(200)
      expect(snap.balanceMicros).toBe(100_000_000 - expected)
    })

    it("a settlement crossing the key quota flips it to quota_exhausted, at once for lookups and checks", async () => {
      const rt = open(await fresh(), storeConfig(), { cacheTtlMillis: 60_000 })
      const p = await principal(rt, "sk-store-alice-plain")
      expect(await check(rt, p)).toBe("ok")
      await settle(rt, settlement("r-quota-1", p, "house-model", usage({ outputTokens: 20_000 }))) // 6_000 of 10_000
      expect(await check(rt, p)).toBe("ok")
      await settle(rt, settlement("r-quota-2", p, "house-model", usage({ outputTokens: 20_000 }))) // 12_000
      const refused = await check(rt, p)
      expect(refused).toMatchObject({ _tag: "InsufficientQuota", code: "key_quota_exhausted" })
      // The lookup cache (60 s TTL here) was invalidated by the flip, not by expiry.
      expect((await principal(rt, "sk-store-alice-plain")).key.status).toBe("quota_exhausted")
      expect(await one(rt, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-plain'")).toBe(12_000)
    })
  })

  describe("eligibility", () => {
    // A client has its answer before its settlement commits; the next request, however quickly it
    // follows, must still be judged on that cost.
    it("counts a settlement still waiting for its batch, and stops counting it once committed", async () => {
      const rt = open(await fresh(), storeConfig(), { cacheTtlMillis: 60_000 })
      const p = await principal(rt, "sk-store-alice-plain")
      await settle(rt, settlement("r-inflight-1", p, "house-model", usage({ outputTokens: 20_000 }))) // 6_000 of 10_000
      expect(await check(rt, p)).toBe("ok")
      // Enqueued, not awaited: the check runs before the writer's batch commits.
      const pending = rt.runPromise(Effect.flatMap(Quota, (q) => q.settle(settlement("r-inflight-2", p, "house-model", usage({ outputTokens: 20_000 })))))
      expect(await check(rt, p)).toMatchObject({ _tag: "InsufficientQuota", code: "key_quota_exhausted" })
      expect((await pending).cost).toBe(6_000)
      expect(await check(rt, p)).toMatchObject({ _tag: "InsufficientQuota", code: "key_quota_exhausted" })
      expect(await one(rt, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-plain'")).toBe(12_000)
    })

    it("refuses a balance at or below zero", async () => {
      const rt = open(await fresh())
      expect(await check(rt, await principal(rt, "sk-store-bob-plain"))).toMatchObject({
        _tag: "InsufficientQuota",
        code: "insufficient_balance"
      })
    })

    it("sees its own spending at once: the balance cache is written through, not left to expire", async () => {
      const rt = open(await fresh(), storeConfig({ balanceAlice: 0.001 }), { cacheTtlMillis: 60_000 })
      const p = await principal(rt, "sk-store-alice-paid")
      expect(await check(rt, p)).toBe("ok")
      await settle(rt, settlement("r-broke", p, "house-model", usage({ outputTokens: 10_000 }))) // 4_500 of 1_000
      expect(await check(rt, p)).toMatchObject({ _tag: "InsufficientQuota", code: "insufficient_balance" })
    })

    it("needs an active, current subscription in a subscription group", async () => {
      const rt = open(await fresh())
      expect(await check(rt, await principal(rt, "sk-store-carol-daily"))).toBe("ok")
      expect(await check(rt, await principal(rt, "sk-store-carol-monthly"))).toBe("ok")
      expect(await check(rt, await principal(rt, "sk-store-dave-daily"))).toMatchObject({
        _tag: "PermissionDenied",
        code: "subscription_required"
      })
      expect(await check(rt, await principal(rt, "sk-store-dave-weekly"))).toMatchObject({
        _tag: "PermissionDenied",
        code: "subscription_expired"
      })
      expect(await check(rt, await principal(rt, "sk-store-dave-monthly"))).toMatchObject({
        _tag: "PermissionDenied",
        code: "subscription_required"
      })
    })

    it("reads the time from the Clock: a subscription is refused before it starts and after it expires", async () => {
      const rt = open(await fresh())
      const monthly = await principal(rt, "sk-store-carol-monthly")
      expect(await check(rt, monthly, Date.parse(past) - 3_600_000)).toMatchObject({ _tag: "PermissionDenied", code: "subscription_required" })
      expect(await check(rt, monthly, Date.parse(past) + 3_600_000)).toBe("ok")
      expect(await check(rt, monthly, Date.parse(future) + 3_600_000)).toMatchObject({ _tag: "PermissionDenied", code: "subscription_expired" })
    })

    it("stops a used-up daily, weekly or monthly window with 429 until the window resets", async () => {
      const rt = open(await fresh(), storeConfig(), { cacheTtlMillis: 60_000 })
      const now = Date.now()
      const daily = await principal(rt, "sk-store-carol-daily")
      // Yesterday's spend belongs to yesterday's window.
      await settle(rt, settlement("r-win-0", daily, "fam-x", usage({ inputTokens: 600_000 }), new Date(now - 86_400_000)))
      expect(await check(rt, daily)).toBe("ok")
      await settle(rt, settlement("r-win-1", daily, "fam-x", usage({ inputTokens: 600_000 }))) // 1.2 USD of 1
      const refused = await check(rt, daily)
      expect(refused).toMatchObject({ _tag: "RateLimited", code: "daily_limit_exceeded" })
      const midnight = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate() + 1)
      const retryAfter = refused === "ok" ? 0 : (refused as { retryAfterSeconds?: number }).retryAfterSeconds ?? 0
      expect(Math.abs(retryAfter - Math.ceil((midnight - now) / 1000))).toBeLessThanOrEqual(2)
      // The balance is not what subscriptions spend.
      expect(await one(rt, "SELECT balance_micros FROM users WHERE name = 'carol'")).toBe(0)

      const weekly = await principal(rt, "sk-store-carol-weekly")
      await settle(rt, settlement("r-win-2", weekly, "fam-x", usage({ inputTokens: 300_000 })))
      expect(await check(rt, weekly)).toMatchObject({ _tag: "RateLimited", code: "weekly_limit_exceeded" })
      const monthly = await principal(rt, "sk-store-carol-monthly")
      await settle(rt, settlement("r-win-3", monthly, "fam-x", usage({ inputTokens: 300_000 })))
      expect(await check(rt, monthly)).toMatchObject({ _tag: "RateLimited", code: "monthly_limit_exceeded" })
    })
  })

  describe("usage figures", () => {
    it("reads today, total and per-model stats over an inclusive day range, split at UTC midnight", async () => {
      const rt = open(await fresh())
      const p = await principal(rt, "sk-store-alice-paid")
      const u = usage({ inputTokens: 100, outputTokens: 10 })
      await settle(rt, settlement("r-day-1", p, "model-a", u, new Date("2026-03-09T23:59:59.999Z")))
      await settle(rt, settlement("r-day-2", p, "model-b", u, new Date("2026-03-10T00:00:00.000Z")))
      await settle(rt, settlement("r-day-3", p, "model-a", u, new Date("2026-03-11T12:00:00.000Z")))
      const snap = (from: string, to: string) =>
        run(rt, Effect.flatMap(Quota, (q) => q.snapshot(p, { from, to }, new Date("2026-03-10T10:00:00Z"))))
      const models = async (from: string, to: string) =>
        Object.fromEntries((await snap(from, to)).byModel.map((m) => [m.model, m.totals.requests]))

      const s = await snap("2026-03-10", "2026-03-10")
      expect(s.today.requests).toBe(1)
      expect(s.total.requests).toBe(3)
      expect(s.total.inputTokens).toBe(300)
      expect(await models("2026-03-10", "2026-03-10")).toEqual({ "model-b": 1 })
      expect(await models("2026-03-09", "2026-03-10")).toEqual({ "model-a": 1, "model-b": 1 })
      expect(await models("2026-03-09", "2026-03-11")).toEqual({ "model-a": 2, "model-b": 1 })
      expect(await models("2026-03-11", "2026-03-11")).toEqual({ "model-a": 1 })
      expect(await models("2026-03-12", "2026-04-01")).toEqual({})
    })

    it("a restart keeps every figure", async () => {
      const db = await fresh()
      const first = open(db)
      const p = await principal(first, "sk-store-alice-plain")
      const c = await principal(first, "sk-store-carol-daily")
      await settle(first, settlement("r-keep-1", p, "house-model", usage({ inputTokens: 1000, outputTokens: 40_000 })))
      await settle(first, settlement("r-keep-2", c, "fam-x", usage({ inputTokens: 1000, outputTokens: 100 })))
      const today = new Date().toISOString().slice(0, 10)
      const range = { from: today, to: today }
      const before = await run(first, Effect.flatMap(Quota, (q) => q.snapshot(p, range, new Date())))
      const beforeSub = await run(first, Effect.flatMap(Quota, (q) => q.snapshot(c, range, new Date())))
      await first.dispose()

      const second = open(db)
      const p2 = await principal(second, "sk-store-alice-plain")
      const after = await run(second, Effect.flatMap(Quota, (q) => q.snapshot(p2, range, new Date())))
      const afterSub = await run(
        second,
        Effect.flatMap(Quota, (q) => q.snapshot(c, range, new Date()))
      )
      expect(after).toEqual(before)
      expect(after.key.status).toBe("quota_exhausted")
      expect(afterSub.subscription?.spends).toEqual(beforeSub.subscription?.spends)
      expect(await settle(second, settlement("r-keep-1", p2, "house-model", usage({ outputTokens: 1 })))).toBe(0)
    })

    it("shutdown writes every settlement already accepted", async () => {
      const db = await fresh()
      const first = open(db)
      const p = await principal(first, "sk-store-alice-paid")
      // The callers are fibers of their own, not the runtime's: Effect 4's ManagedRuntime interrupts the
      // fibers it started before closing its layers, and a request's fiber outlives the store's shutdown.
      const settleWith = Effect.runForkWith(await first.context())
      const fibers = Array.from({ length: 2000 }, (_, i) =>
        settleWith(Effect.flatMap(Quota, (q) => q.settle(settlement(`r-flush-${i}`, p, "gpt-5.4", usage({ outputTokens: 10 }))))))
      // Most are still queued when shutdown starts: that is what this test is about.
      expect(fibers.filter((f) => f.pollUnsafe() !== undefined).length).toBeLessThan(2000)
      await first.dispose()
      const results = await Promise.all(fibers.map((f) => Effect.runPromise(Fiber.await(f))))
      const second = open(db)
      const written = await one(second, "SELECT COUNT(*) FROM usage_events")
      // Every settlement that was accepted (not refused as "shut down") is in the database.
      expect(written).toBe(results.filter(Exit.isSuccess).length)
      expect(written).toBeGreaterThan(0)
      expect(await one(second, "SELECT SUM(requests) FROM usage_daily")).toBe(written)
    })
  })

  describe("requests that may owe a settlement", () => {
    it("writes the marker of a request still running after the delay, on its own if need be", async () => {
      const rt = open(await fresh(), storeConfig(), { openMarkerDelayMillis: 100 })
      const p = await principal(rt, "sk-store-alice-paid")
      await run(rt, Effect.scoped(Effect.gen(function*() {
        const quota = yield* Quota
        const sql = yield* SqlClient.SqlClient
        yield* quota.track("r-quick", p, "gpt-5.4")
        yield* quota.settle(settlement("r-quick", p, "gpt-5.4", usage({ outputTokens: 5 })))
        yield* quota.track("r-slow", p, "gpt-5.4")
        yield* Effect.sleep("400 millis") // no settlement comes along: the tick writes it
        const rows = yield* sql<{ request_id: string }>`SELECT request_id FROM usage_open`
        expect(rows.map((r) => r.request_id)).toEqual(["r-slow"])
      })))
      await run(rt, Effect.flatMap(Store, (s) => s.flush))
      expect(await one(rt, "SELECT COUNT(*) FROM usage_open")).toBe(0)
    })

    it("writes the marker of a request that starts after an idle spell (the tick sleeps while nothing is open)", async () => {
      const rt = open(await fresh(), storeConfig(), { openMarkerDelayMillis: 100 })
      const p = await principal(rt, "sk-store-alice-paid")
      await run(rt, Effect.scoped(Effect.gen(function*() {
        const quota = yield* Quota
        const sql = yield* SqlClient.SqlClient
        yield* quota.track("r-before", p, "gpt-5.4")
        yield* quota.settle(settlement("r-before", p, "gpt-5.4", usage({ outputTokens: 5 })))
        yield* Effect.sleep("300 millis") // nothing open: the tick stops
        yield* quota.track("r-after", p, "gpt-5.4")
        yield* Effect.sleep("400 millis") // and starts again for this one
        const rows = yield* sql<{ request_id: string }>`SELECT request_id FROM usage_open`
        expect(rows.map((r) => r.request_id)).toEqual(["r-after"])
      })))
      await run(rt, Effect.flatMap(Store, (s) => s.flush))
      expect(await one(rt, "SELECT COUNT(*) FROM usage_open")).toBe(0)
    })

    it("keeps an open marker until settled or ended, and reports markers left by a crash", async () => {
      const db = await fresh()
      const rt = open(db, storeConfig(), { openMarkerDelayMillis: 0 })
      const p = await principal(rt, "sk-store-alice-paid")
      await run(rt, Effect.scoped(Effect.gen(function*() {
        const quota = yield* Quota
        yield* quota.track("r-open-settled", p, "gpt-5.4")
        yield* quota.track("r-open-failed", p, "gpt-5.4")
        yield* (yield* Store).flush
        const sql = yield* SqlClient.SqlClient
        expect((yield* sql`SELECT request_id FROM usage_open ORDER BY request_id`).length).toBe(2)
        yield* quota.settle(settlement("r-open-settled", p, "gpt-5.4", usage({ outputTokens: 5 })))
      })))
      await run(rt, Effect.flatMap(Store, (s) => s.flush))
      expect(await one(rt, "SELECT COUNT(*) FROM usage_open")).toBe(0)

      // A crash: the marker is written, and the process never gets to settle or close it.
      await query(rt, `INSERT INTO usage_open (request_id, key_id, model, started_at)
        VALUES ('r-crashed', 'alice-paid', 'gpt-5.4', ${Date.now() - 10_000})`)
      await rt.dispose()

      const lines: Array<string> = []
      const capture = Logger.layer([
        Logger.make(({ fiber, message }) => {
          lines.push(`${String(message)} ${JSON.stringify(fiber.getRef(References.CurrentLogAnnotations))}`)
        })
      ])
      const again = open(db, storeConfig(), { reportOrphans: true, orphanAfterMillis: 1000 }, capture)
      expect(await one(again, "SELECT COUNT(*) FROM usage_open WHERE reported_at IS NOT NULL")).toBe(1)
      expect(lines.some((l) => l.includes("never settled") && l.includes("r-crashed"))).toBe(true)
    })
  })
}

/** Two gateways on one database (PostgreSQL): concurrent settlement on one key still sums exactly. */
export const sharedDatabaseSuite = (makeBackend: () => Backend) => {
  let backend: Backend
  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(() => backend.cleanup())

  it("two instances settling 100 requests each on one key add up exactly", async () => {
    const db = await backend.fresh()
    const a = openStore(db, dataOf(storeConfig()))
    await principal(a, "sk-store-alice-paid")
    const b = openStore(db, dataOf(storeConfig()))
    try {
      const pa = await principal(a, "sk-store-alice-paid")
      const pb = await principal(b, "sk-store-alice-paid")
      const batch = (rt: Runtime, p: Principal, tag: string) =>
        run(rt, Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
          Effect.flatMap(Quota, (q) => q.settle(settlement(`r-${tag}-${i}`, p, "gpt-5.4", usage({ inputTokens: 100 + i, outputTokens: 10 + i })))), { concurrency: "unbounded" }))
      const [ca, cb] = await Promise.all([batch(a, pa, "a"), batch(b, pb, "b")])
      const expected = [...ca, ...cb].reduce((x, y) => x + y.cost, 0)
      expect(await one(a, "SELECT balance_micros FROM users WHERE name = 'alice'")).toBe(100_000_000 - expected)
      expect(await one(a, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-paid'")).toBe(expected)
      expect(await one(a, "SELECT SUM(requests) FROM usage_daily")).toBe(200)
    } finally {
      await a.dispose()
      await b.dispose()
    }
  })
}
