/**
 * The single writer: settlements (and the open-request markers) queue here and are written in
 * batches, one transaction per batch (group commit). SQLite runs synchronously, so nothing else
 * can enqueue while a transaction runs; before committing, the writer therefore yields to I/O for
 * a moment, and keeps gathering while new items keep arriving. Idle, that costs one event-loop
 * turn; under load, one transaction carries many settlements.
 *
 * Exactly-once: the usage_events primary key (the request id) decides which settlements are new;
 * only those move balances, windows, key quotas and rollups, in the same transaction. A retried
 * batch (or a retried settle) therefore cannot charge twice, and a batch either lands whole or not at all.
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Chunk, Deferred, Effect, Exit, Queue, Schedule, Schema, type Scope } from "effect"
import { KeyStatus } from "../domain/config.js"
import { StoreError } from "../domain/errors.js"
import type { Micros } from "../domain/model.js"
import { windowStart, type WindowSpends } from "../domain/subscription.js"
import { dayOf } from "../domain/usageReport.js"
import type { Settlement } from "../services/Quota.js"
import { spendsOf, SpendRow } from "./queries.js"
import { DbInt, decodeRows, orStoreError } from "./rows.js"

export interface SettleItem {
  readonly _tag: "Settle"
  readonly settlement: Settlement
  readonly cost: Micros
  /** Its open marker was written, so the settlement removes it. */
  readonly closesMarker: boolean
  /** Called once, when the batch carrying it has committed (the cost charged, 0 for a repeat) or failed. */
  readonly done: (result: Exit.Exit<Micros, StoreError>) => void
}

/** A request's open marker, written once the request has run for a while (see Store.track). */
export interface OpenMarker {
  readonly requestId: string
  readonly keyId: string
  readonly model: string
  readonly at: number
}

/** A request that ended without settling: its written marker goes. */
export interface CloseItem {
  readonly _tag: "Close"
  readonly requestId: string
}

/** Wakes the writer to write markers that have come due. */
export interface TickItem {
  readonly _tag: "Tick"
}

export interface FlushItem {
  readonly _tag: "Flush"
  readonly done: Deferred.Deferred<void>
}

export type WriterItem = SettleItem | CloseItem | TickItem | FlushItem

/** Fresh figures read back from the rows a batch changed, for the in-process caches. */
export interface Committed {
  readonly balances: ReadonlyArray<{ readonly user: string; readonly balanceMicros: Micros }>
  readonly keys: ReadonlyArray<{ readonly id: string; readonly status: KeyStatus; readonly quotaUsedMicros: Micros }>
  readonly subscriptions: ReadonlyArray<{ readonly user: string; readonly group: string; readonly spends: WindowSpends }>
}

export interface WriterOptions {
  readonly maxBatch: number
  /**
   * After each batch, before any settle resolves: what it committed (undefined when it failed) and
   * the settlements it carried, committed or not. One synchronous step, so the caches and the
   * costs in flight (inFlight.ts) never both count, nor both miss, a settlement.
   */
  readonly onBatch: (committed: Committed | undefined, settles: ReadonlyArray<SettleItem>) => Effect.Effect<void>
  /** The open markers due to be written now (the Store marks them written). */
  readonly dueMarkers: () => ReadonlyArray<OpenMarker>
}

const CHUNK = 100 // rows per multi-row statement: far below both drivers' parameter limits

const chunks = <A>(xs: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < xs.length; i += CHUNK) out.push(xs.slice(i, i + CHUNK))
  return out
}

const sum = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n)
const byKey = <A>(m: Map<string, A>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

const RequestIdRow = Schema.Struct({ request_id: Schema.String })
const BalanceRow = Schema.Struct({ name: Schema.String, balance_micros: DbInt })
const KeyRow = Schema.Struct({ id: Schema.String, status: KeyStatus, quota_used_micros: DbInt })
const SubRow = Schema.extend(SpendRow, Schema.Struct({ user_name: Schema.String, group_name: Schema.String }))

interface DailyTotals {
  keyId: string
  day: string
  model: string
  requests: number
  input: number
  output: number
  cacheRead: number
  cacheCreation: number
  cost: number
}

/**
 * One batch, one transaction. Rows are touched in a fixed order (users, subscriptions, keys,
 * rollups; each sorted) so concurrent instances on PostgreSQL cannot deadlock on each other.
 */
/** Runs one statement on the batch's connection, inside its transaction. */
type Run = (statement: Statement.Statement<unknown>) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>

/**
 * One transaction on one reserved connection, statements compiled and run on it directly.
 * `withTransaction` and executing a Statement add, per statement, a span, a scoped connection
 * lookup and a prepare-cache lookup keyed by the statement's text: measured, that was about half
 * of a batch's CPU (docs/performance.md). This batch is the one transaction on the request path,
 * so it is written out here once: BEGIN, the statements, COMMIT, or ROLLBACK on any failure.
 */
const inTransaction = <A, E>(
  sql: SqlClient.SqlClient,
  body: (run: Run) => Effect.Effect<A, E>
): Effect.Effect<A, E | SqlError.SqlError> =>
  Effect.scoped(
    Effect.flatMap(sql.reserve, (conn) => {
      const run: Run = (statement) => {
        const [text, params] = statement.compile()
        return conn.execute(text, params, undefined)
      }
      const rollback = Effect.ignore(conn.execute("ROLLBACK", [], undefined))
      const commit = Effect.tapError(conn.execute("COMMIT", [], undefined), () => rollback)
      return Effect.zipRight(conn.execute("BEGIN", [], undefined), Effect.exit(body(run))).pipe(
        Effect.flatMap((exit): Effect.Effect<A, E | SqlError.SqlError> =>
          Exit.isFailure(exit) ? Effect.zipRight(rollback, exit) : Effect.as(commit, exit.value)
        )
      )
    })
  )

const writeBatch = (
  sql: SqlClient.SqlClient,
  run: Run,
  opens: ReadonlyArray<OpenMarker>,
  settles: ReadonlyArray<SettleItem>,
  closes: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const now = Date.now()
    for (const part of chunks(opens)) {
      yield* run(sql`INSERT INTO usage_open ${
        sql.insert(part.map((o) => ({ request_id: o.requestId, key_id: o.keyId, model: o.model, started_at: o.at })))
      } ON CONFLICT (request_id) DO NOTHING`)
    }

    const fresh = new Set<string>()
    for (const part of chunks(settles)) {
      const rows = yield* run(sql`INSERT INTO usage_events ${
        sql.insert(part.map(({ cost, settlement: s }) => ({
          request_id: s.requestId,
          key_id: s.principal.key.id,
          user_name: s.principal.user.name,
          group_name: s.principal.group.name,
          model: s.model,
          day: dayOf(s.at),
          at: s.at.getTime(),
          input_tokens: s.usage.inputTokens,
          output_tokens: s.usage.outputTokens,
          cache_read_tokens: s.usage.cacheReadTokens,
          cache_creation_tokens: s.usage.cacheCreationTokens,
          reasoning_tokens: s.usage.reasoningTokens,
          cost_micros: cost,
          charged_to: s.principal.group.billing
        })))
      } ON CONFLICT (request_id) DO NOTHING RETURNING request_id`)
      for (const r of yield* decodeRows(RequestIdRow)(rows)) fresh.add(r.request_id)
    }

    const balances = new Map<string, number>()
    const keys = new Map<string, number>()
    // A subscription's costs grouped by the windows they fall in (a batch may straddle midnight).
    const subs = new Map<string, { user: string; group: string; at: number; cost: number }>()
    const daily = new Map<string, DailyTotals>()
    for (const { cost, settlement: s } of settles) {
      if (!fresh.has(s.requestId)) continue
      const { group, key, user } = s.principal
      const at = s.at.getTime()
      if (group.billing === "subscription") {
        const id = `${user.name}\u0000${group.name}\u0000${String(windowStart("daily", at)).padStart(15, "0")}`
        const entry = subs.get(id)
        if (entry) entry.cost += cost
        else subs.set(id, { user: user.name, group: group.name, at, cost })
      } else {
        sum(balances, user.name, cost)
      }
      sum(keys, key.id, cost)
      const day = dayOf(s.at)
      const id = `${key.id}\u0000${day}\u0000${s.model}`
      const t = daily.get(id) ??
        { keyId: key.id, day, model: s.model, requests: 0, input: 0, output: 0, cacheRead: 0, cacheCreation: 0, cost: 0 }
      t.requests += 1
      t.input += s.usage.inputTokens
      t.output += s.usage.outputTokens
      t.cacheRead += s.usage.cacheReadTokens
      t.cacheCreation += s.usage.cacheCreationTokens
      t.cost += cost
      daily.set(id, t)
    }

    const committed = {
      balances: [] as Array<Committed["balances"][number]>,
      keys: [] as Array<Committed["keys"][number]>,
      subscriptions: [] as Array<Committed["subscriptions"][number]>
    }
    for (const [user, cost] of byKey(balances)) {
      const rows = yield* run(sql`UPDATE users SET balance_micros = balance_micros - ${cost}, balance_touched = 1,
          updated_at = ${now} WHERE name = ${user} RETURNING name, balance_micros`)
      for (const r of yield* decodeRows(BalanceRow)(rows)) committed.balances.push({ user: r.name, balanceMicros: r.balance_micros })
    }
    for (const [, { at, cost, group, user }] of byKey(subs)) {
      const d = windowStart("daily", at)
      const w = windowStart("weekly", at)
      const m = windowStart("monthly", at)
      // A window start older than this cost's window means that window is over: start afresh.
      const rows = yield* run(sql`UPDATE subscriptions SET
          daily_used_micros = CASE WHEN daily_start = ${d} THEN daily_used_micros + ${cost}
            WHEN daily_start < ${d} THEN ${cost} ELSE daily_used_micros END,
          daily_start = CASE WHEN daily_start < ${d} THEN ${d} ELSE daily_start END,
          weekly_used_micros = CASE WHEN weekly_start = ${w} THEN weekly_used_micros + ${cost}
            WHEN weekly_start < ${w} THEN ${cost} ELSE weekly_used_micros END,
          weekly_start = CASE WHEN weekly_start < ${w} THEN ${w} ELSE weekly_start END,
          monthly_used_micros = CASE WHEN monthly_start = ${m} THEN monthly_used_micros + ${cost}
            WHEN monthly_start < ${m} THEN ${cost} ELSE monthly_used_micros END,
          monthly_start = CASE WHEN monthly_start < ${m} THEN ${m} ELSE monthly_start END,
          updated_at = ${now}
        WHERE user_name = ${user} AND group_name = ${group}
        RETURNING user_name, group_name, daily_start, daily_used_micros, weekly_start, weekly_used_micros,
          monthly_start, monthly_used_micros`)
      for (const r of yield* decodeRows(SubRow)(rows)) {
        committed.subscriptions.push({ user: r.user_name, group: r.group_name, spends: spendsOf(r) })
      }
    }
    for (const [id, cost] of byKey(keys)) {
      // SET expressions read the row as it was, so `quota_used_micros + cost` is the new figure.
      const rows = yield* run(sql`UPDATE api_keys SET quota_used_micros = quota_used_micros + ${cost},
          status = CASE WHEN status = 'active' AND quota_micros IS NOT NULL AND quota_micros > 0
            AND quota_used_micros + ${cost} >= quota_micros THEN 'quota_exhausted' ELSE status END,
          updated_at = ${now}
        WHERE id = ${id} RETURNING id, status, quota_used_micros`)
      for (const r of yield* decodeRows(KeyRow)(rows)) {
        committed.keys.push({ id: r.id, status: r.status, quotaUsedMicros: r.quota_used_micros })
      }
    }
    for (const part of chunks(byKey(daily).map(([, t]) => t))) {
      yield* run(sql`INSERT INTO usage_daily ${
        sql.insert(part.map((t) => ({
          key_id: t.keyId,
          day: t.day,
          model: t.model,
          requests: t.requests,
          input_tokens: t.input,
          output_tokens: t.output,
          cache_read_tokens: t.cacheRead,
          cache_creation_tokens: t.cacheCreation,
          cost_micros: t.cost
        })))
      } ON CONFLICT (key_id, day, model) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
        input_tokens = usage_daily.input_tokens + excluded.input_tokens,
        output_tokens = usage_daily.output_tokens + excluded.output_tokens,
        cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
        cache_creation_tokens = usage_daily.cache_creation_tokens + excluded.cache_creation_tokens,
        cost_micros = usage_daily.cost_micros + excluded.cost_micros`)
    }
    const finished = [...settles.filter((s) => s.closesMarker).map((s) => s.settlement.requestId), ...closes]
    for (const part of chunks(finished)) yield* run(sql`DELETE FROM usage_open WHERE request_id IN ${sql.in(part)}`)
    return { fresh, committed } as const
  })

/** Transient failures (a dropped connection, a busy file) are retried; exactly-once makes that safe. */
const retryPolicy = Schedule.exponential("25 millis").pipe(Schedule.intersect(Schedule.recurs(4)))

/** One turn of the event loop: lets pending I/O run (and enqueue), unlike a microtask. */
const yieldToIo = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Most event-loop turns spent gathering one batch: bounds the latency added under load. Gathering
 * stops earlier after two turns in a row bring nothing: under load settlements arrive a turn or
 * two apart, and each batch has a fixed cost (about 0.5 ms with SQLite) that bigger batches share
 * (measured: about 10% less CPU per request than stopping at the first quiet turn).
 */
const MAX_GATHER_TURNS = 8
const QUIET_TURNS = 2

export interface Writer {
  readonly enqueue: (item: WriterItem) => boolean
  /** Resolves when everything enqueued before it has been written (or has failed). */
  readonly flush: Effect.Effect<void>
}

export const makeWriter = (options: WriterOptions): Effect.Effect<Writer, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.unbounded<WriterItem>()

    const process = (items: ReadonlyArray<WriterItem>) => {
      const settles: Array<SettleItem> = []
      const repeats: Array<SettleItem> = [] // the same request id twice in one batch
      const closes: Array<string> = []
      const flushes: Array<FlushItem> = []
      const seen = new Set<string>()
      for (const item of items) {
        if (item._tag === "Close") closes.push(item.requestId)
        else if (item._tag === "Flush") flushes.push(item)
        else if (item._tag === "Settle") {
          if (seen.has(item.settlement.requestId)) repeats.push(item)
          else {
            seen.add(item.settlement.requestId)
            settles.push(item)
          }
        }
      }
      const failAll = (error: StoreError) =>
        Effect.zipRight(
          options.onBatch(undefined, [...settles, ...repeats]),
          Effect.sync(() => {
            const failed = Exit.fail(error)
            for (const s of settles) s.done(failed)
            for (const s of repeats) s.done(failed)
          })
        )

      return Effect.gen(function*() {
        const opens = options.dueMarkers()
        if (opens.length + settles.length + closes.length === 0) return
        const result = yield* inTransaction(sql, (run) => writeBatch(sql, run, opens, settles, closes)).pipe(
          Effect.retry(retryPolicy),
          orStoreError("writing settlements failed"),
          Effect.either
        )
        if (result._tag === "Left") {
          if (settles.length === 0) yield* Effect.logWarning("recording open requests failed", result.left)
          return yield* failAll(result.left)
        }
        yield* options.onBatch(result.right.committed, [...settles, ...repeats])
        // One step for the whole batch: each settle resumes its waiting request.
        const fresh = result.right.fresh
        yield* Effect.sync(() => {
          for (const s of settles) s.done(Exit.succeed(fresh.has(s.settlement.requestId) ? s.cost : 0))
          for (const s of repeats) s.done(Exit.succeed(0))
        })
      }).pipe(
        // A bug here must not stop the writer (every later settlement would wait forever).
        Effect.catchAllCause((cause) =>
          Effect.logError("the settlement writer failed on a batch", cause).pipe(
            Effect.zipRight(failAll(new StoreError({ message: "internal error while writing settlements" })))
          )
        ),
        Effect.ensuring(Effect.forEach(flushes, (f) => Deferred.succeed(f.done, undefined), { discard: true }))
      )
    }

    // Only the wait for a first item is interruptible: once items are out of the queue, their
    // batch is gathered and written, also during shutdown, because their callers are waiting.
    const nextBatch = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const items = Chunk.toArray(yield* restore(Queue.takeBetween(queue, 1, options.maxBatch)))
        let quiet = 0
        for (let turn = 0; turn < MAX_GATHER_TURNS && items.length < options.maxBatch; turn++) {
          yield* yieldToIo
          const more = yield* Queue.takeUpTo(queue, options.maxBatch - items.length)
          if (Chunk.isEmpty(more)) {
            if (++quiet >= QUIET_TURNS) break
            continue
          }
          quiet = 0
          items.push(...more)
        }
        yield* process(items)
      })
    )
    yield* nextBatch.pipe(Effect.forever, Effect.forkScoped)

    const flush = Effect.gen(function*() {
      const done = yield* Deferred.make<void>()
      yield* Queue.offer(queue, { _tag: "Flush", done })
      yield* Deferred.await(done)
    })
    return { enqueue: (item) => Queue.unsafeOffer(queue, item), flush }
  })
