/**
 * The journaled Quota (services/quota/journaled.ts): a settlement its store refuses is journaled,
 * not lost, and is written once the store takes settlements again; a restart in between replays
 * the journal; a journal holding settlements the store already has (a crash after the commit,
 * before the journal forgot them) and a live settle racing the replay charge each request once.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, ManagedRuntime, Metric, Option, References, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, describe, expect, it } from "vitest"
import { AppConfig } from "../../src/config/AppConfig.js"
import { StoreError } from "../../src/domain/errors.js"
import type { Principal } from "../../src/domain/model.js"
import { sha256Hex } from "../../src/config/resolve.js"
import { costMicrosTotal } from "../../src/observability/metrics.js"
import * as JournalFile from "../../src/services/journal/file.js"
import { SettlementJournal } from "../../src/services/journal/SettlementJournal.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import * as QuotaJournaled from "../../src/services/quota/journaled.js"
import type { Settlement } from "../../src/domain/settlement.js"
import { type Charged, notCharged, Quota } from "../../src/services/quota/Quota.js"
import { configSyncLayer, databaseLayer } from "../../src/store/Database.js"
import * as KeyRepoSql from "../../src/store/keyRepoSql.js"
import * as QuotaSqlJournaled from "../../src/store/quotaSqlJournaled.js"
import { Store } from "../../src/store/Store.js"
import { sqliteTarget } from "../../src/store/target.js"
import { waitFor } from "../http/helpers.js"
import { dataOf } from "../store/harness.js"
import { testPrincipal } from "../support/principal.js"

const quiet = Layer.succeed(References.MinimumLogLevel, "Error")

const dir = mkdtempSync(join(tmpdir(), "modelgate-journaled-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const settlementOf = (requestId: string, principal: Principal, outputTokens = 100): Settlement => ({
  requestId,
  principal,
  model: "gpt-5.4",
  usage: { inputTokens: 1000, outputTokens, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 },
  at: new Date()
})

describe("a settlement the store refuses", () => {
  it("is journaled, and written once when the store takes settlements again", async () => {
    let down = true
    const written = new Map<string, Settlement>()
    let attempts = 0
    // A store that refuses while `down`, and keys settlements by request id as the real one does.
    const inner = Layer.succeed(Quota, Quota.of({
      check: () => Effect.undefined,
      settle: (s) =>
        Effect.suspend((): Effect.Effect<Charged, StoreError> => {
          attempts++
          if (down) return Effect.fail(new StoreError({ message: "the database is away" }))
          if (written.has(s.requestId)) return Effect.succeed(notCharged)
          written.set(s.requestId, s)
          return Effect.succeed({ cost: 7, priceFallback: false })
        }),
      snapshot: () => Effect.die("not used"),
      track: () => Effect.void
    }))
    const rt = ManagedRuntime.make(
      QuotaJournaled.layer({ retryMillis: 10, maxRetryMillis: 40 }).pipe(
        Layer.provide(inner),
        Layer.provideMerge(SettlementJournal.layerTest()),
        Layer.provideMerge(quiet)
      )
    )
    try {
      const settlements = Array.from({ length: 10 }, (_, i) => settlementOf(`r-${i}`, testPrincipal(), 10 + i))
      const charged = await rt.runPromise(
        Effect.flatMap(Quota, (q) => Effect.forEach(settlements, q.settle, { concurrency: "unbounded" }))
      )
      expect(charged.every((c) => c.journaled === true)).toBe(true)
      // A settle of a request already journaled (a retry) adds nothing.
      await rt.runPromise(Effect.flatMap(Quota, (q) => q.settle(settlements[3]!)))
      const depth = () => rt.runSync(Effect.map(SettlementJournal, (j) => j.depth()))
      expect(depth()).toBe(10)
      expect(written.size).toBe(0)
      // Still refused: the replay keeps trying and keeps everything.
      const before = attempts
      await waitFor(() => attempts > before + 10)
      expect(depth()).toBe(10)

      down = false
      await waitFor(() => depth() === 0)
      expect([...written.keys()].sort()).toEqual(settlements.map((s) => s.requestId).sort())
      expect(written.get("r-4")).toEqual(settlements[4])
      // Written: a live settle of the same request is a repeat.
      const again = await rt.runPromise(Effect.flatMap(Quota, (q) => q.settle(settlements[0]!)))
      expect(again).toEqual(notCharged)
    } finally {
      await rt.dispose()
    }
  })
})

describe("a settlement the store has not confirmed within the store timeout", () => {
  it("is journaled while the store still holds it; committed after all, it is charged and counted once", async () => {
    let held = true
    const waiting: Array<() => void> = []
    const written = new Map<string, Settlement>()
    // A store that answers only once `held` is lifted (a stalled database), keyed by request id.
    const inner = Layer.succeed(Quota, Quota.of({
      check: () => Effect.undefined,
      settle: (s) =>
        Effect.andThen(
          Effect.callback<void>((resume) => {
            if (held) waiting.push(() => resume(Effect.void))
            else resume(Effect.void)
          }),
          Effect.sync((): Charged => {
            if (written.has(s.requestId)) return notCharged
            written.set(s.requestId, s)
            return { cost: 7, priceFallback: false }
          })
        ),
      snapshot: () => Effect.die("not used"),
      track: () => Effect.void
    }))
    const rt = ManagedRuntime.make(
      QuotaJournaled.layer({ settleTimeoutMillis: 50, retryMillis: 10, maxRetryMillis: 40 }).pipe(
        Layer.provide(inner),
        Layer.provideMerge(SettlementJournal.layerTest()),
        Layer.provideMerge(quiet)
      )
    )
    const counted = () =>
      Effect.runSync(Metric.value(Metric.withAttributes(costMicrosTotal, { group: "late-commit" }))).count
    try {
      const s = settlementOf("late-1", testPrincipal({ group: "late-commit" }))
      const charged = await rt.runPromise(Effect.flatMap(Quota, (q) => q.settle(s)))
      // Answered while the store still holds it: from the journal.
      expect(charged.journaled).toBe(true)
      expect(held).toBe(true)
      const depth = () => rt.runSync(Effect.map(SettlementJournal, (j) => j.depth()))
      expect(depth()).toBe(1)
      expect(written.size).toBe(0)

      // The store answers: the first settle commits, the replay is a repeat; the journal empties.
      held = false
      for (const resume of waiting.splice(0)) resume()
      await waitFor(() => depth() === 0)
      expect([...written.keys()]).toEqual(["late-1"])
      expect(counted()).toBe(7)
    } finally {
      await rt.dispose()
    }
  })
})

describe("the journal over the SQLite store", () => {
  const data = dataOf({
    groups: [{ name: "oa", platform: "openai" }],
    users: [{ name: "alice", balance_usd: 10 }],
    keys: [{ key: "sk-journal-alice-0001", user: "alice", group: "oa", name: "alice-key" }],
    accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
  })

  const open = (file: string, journalPath: string) => {
    const base = Layer.provideMerge(configSyncLayer, databaseLayer(sqliteTarget(file)))
    const store = Layer.provideMerge(Store.layerWith({ reportOrphans: false }), base)
    return ManagedRuntime.make(
      Layer.mergeAll(QuotaSqlJournaled.layer({ retryMillis: 10, maxRetryMillis: 40 }), KeyRepoSql.layer).pipe(
        Layer.provideMerge(JournalFile.layer(journalPath)),
        Layer.provideMerge(store),
        Layer.provide(AppConfig.layer(data, "test")),
        Layer.provideMerge(quiet)
      )
    )
  }
  type Rt = ReturnType<typeof open>

  const query = (rt: Rt, text: string) =>
    rt.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, number | string | null>>(text)))

  it("replays after a restart; what the store already had, and a live settle racing the replay, are charged once", async () => {
    const file = join(dir, "store.db")
    const journalPath = join(dir, "restart", "settlements.journal")
    const first = open(file, journalPath)
    let principal: Principal
    let balanceBefore: number
    try {
      principal = Option.getOrThrow(
        await first.runPromise(Effect.flatMap(KeyRepo, (r) => r.findByHash(sha256Hex("sk-journal-alice-0001"))))
      )
      balanceBefore = Number((await query(first, "SELECT balance_micros FROM users WHERE name = 'alice'"))[0]!["balance_micros"])
      // s1 reaches the store as usual.
      const c1 = await first.runPromise(Effect.flatMap(Quota, (q) => q.settle(settlementOf("s1", principal))))
      expect(c1.cost).toBeGreaterThan(0)
      expect(c1.journaled).toBeUndefined()
    } finally {
      await first.dispose()
    }

    // The process stopped with s1 (committed before the journal forgot it), s2 and s3 journaled,
    // and s2's request still marked open in the store.
    const s1 = settlementOf("s1", principal)
    const s2 = settlementOf("s2", principal, 200)
    const s3 = settlementOf("s3", principal, 300)
    const scope = await Effect.runPromise(Scope.make())
    const journal = await Effect.runPromise(Scope.provide(JournalFile.make(journalPath), scope))
    await Effect.runPromise(Effect.all([s1, s2, s3].map(journal.append)))
    await Effect.runPromise(Scope.close(scope, Exit.void))

    const second = open(file, journalPath)
    try {
      await query(second, `INSERT INTO usage_open (request_id, key_id, model, started_at) VALUES ('s2', 'alice-key', 'gpt-5.4', 1)`)
      // A live settle of s3 (as a retry would) races the replay that started with the runtime.
      await second.runPromise(Effect.flatMap(Quota, (q) => q.settle(s3)))
      const depth = () => second.runSync(Effect.map(SettlementJournal, (j) => j.depth()))
      await waitFor(() => depth() === 0, 10_000)

      const events = await query(second, "SELECT request_id, output_tokens, cost_micros FROM usage_events ORDER BY request_id")
      expect(events.map((e) => [e["request_id"], Number(e["output_tokens"])])).toEqual([["s1", 100], ["s2", 200], ["s3", 300]])
      const charged = events.reduce((sum, e) => sum + Number(e["cost_micros"]), 0)
      const balanceAfter = Number((await query(second, "SELECT balance_micros FROM users WHERE name = 'alice'"))[0]!["balance_micros"])
      expect(balanceBefore - balanceAfter).toBe(charged)
      const rollup = await query(second, "SELECT SUM(requests) AS requests, SUM(output_tokens) AS output, SUM(cost_micros) AS cost FROM usage_daily")
      expect(rollup.map((r) => [Number(r["requests"]), Number(r["output"]), Number(r["cost"])])).toEqual([[3, 600, charged]])
      const key = await query(second, "SELECT quota_used_micros FROM api_keys WHERE id = 'alice-key'")
      expect(Number(key[0]!["quota_used_micros"])).toBe(charged)
      // The replayed request is no longer reported as unsettled.
      expect(await query(second, "SELECT request_id FROM usage_open")).toEqual([])
    } finally {
      await second.dispose()
    }
  })
})
