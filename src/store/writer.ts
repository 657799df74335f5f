/**
 * The single writer: settlements (and the open-request markers) queue here and are written in
 * batches, one transaction per batch (group commit). The writer gathers for a few event-loop turns
 * while new items keep arriving: idle, that costs two turns; under load, one transaction carries
 * many settlements, and each batch's fixed cost (BEGIN, COMMIT, the round trip) is shared.
 *
 * A batch runs where the store's database is best written from: on a SQLite file, on the writer
 * thread (writerThread.ts: node:sqlite is synchronous, and its statements, commits and WAL
 * checkpoints would otherwise run between requests on the event loop); on PostgreSQL or an
 * in-memory SQLite database, on a connection of this process. Its SQL is the same (batch.ts).
 *
 * Exactly-once: the usage_events primary key (the request id) decides which settlements are new;
 * only those move balances, windows, key quotas and rollups, in the same transaction. A retried
 * batch (or a retried settle) therefore cannot charge twice, and a batch either lands whole or not at all.
 */
import { Cause, Clock, Deferred, Effect, Exit, Queue, Result, Schedule, type Scope } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { StoreError } from "../domain/errors.js"
import { type Charged, notCharged } from "../services/quota/Quota.js"
import {
  type Batch,
  type BatchOutcome,
  type BatchSettle,
  type Committed,
  committedOf,
  eventSteps,
  freshIds,
  type OpenMarker,
  type Step,
  textFor,
  totalSteps
} from "./batch.js"
import { dialectOf } from "./client.js"
import { gatherMore } from "./inbox.js"
import { orStoreError } from "./rows.js"
import type { WriterThread } from "./writerThread.js"

export type { Committed, OpenMarker }

export interface SettleItem extends BatchSettle {
  readonly _tag: "Settle"
  /** Called once, when the batch carrying it has committed (what it charged; nothing for a repeat) or failed. */
  readonly done: (result: Exit.Exit<Charged, StoreError>) => void
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

/** Writes one batch in one transaction, or fails having written none of it. */
export type BatchRunner = (batch: Batch) => Effect.Effect<BatchOutcome, StoreError>

export interface WriterOptions {
  readonly maxBatch: number
  readonly runBatch: BatchRunner
  /**
   * After each batch, before any settle resolves: what it committed (undefined when it failed) and
   * the settlements it carried, committed or not. A step that waits on nothing, so the caches and
   * the costs in flight (inFlight.ts) never both miss a settlement. May be plain (void) or an Effect.
   */
  readonly onBatch: (
    committed: Committed | undefined,
    settles: ReadonlyArray<SettleItem>,
    repeats: ReadonlyArray<SettleItem>
  ) => void | Effect.Effect<void>
  /** The open markers due to be written now (the Store marks them written). */
  readonly dueMarkers: () => ReadonlyArray<OpenMarker>
}

/** Runs one statement on the batch's connection, inside its transaction. */
type Run = (step: Step) => Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>

/**
 * One transaction on one reserved connection, statements run on it directly.
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
      const dialect = dialectOf(sql)
      const run: Run = (step) => conn.execute(textFor(step.text, dialect), step.params, undefined)
      const rollback = Effect.ignore(conn.execute("ROLLBACK", [], undefined))
      const commit = Effect.tapError(conn.execute("COMMIT", [], undefined), () => rollback)
      return Effect.andThen(conn.execute("BEGIN", [], undefined), Effect.exit(body(run))).pipe(
        Effect.flatMap((exit): Effect.Effect<A, E | SqlError.SqlError> =>
          Exit.isFailure(exit) ? Effect.andThen(rollback, exit) : Effect.as(commit, exit.value)
        )
      )
    })
  )

/** The batch on a connection of this process: PostgreSQL, and an in-memory SQLite database. */
export const runOnConnection = (sql: SqlClient.SqlClient): BatchRunner => (batch) =>
  inTransaction(sql, (run) =>
    Effect.gen(function*() {
      const fresh = new Set<string>()
      for (const step of eventSteps(batch)) {
        const rows = yield* run(step)
        if (step.rows === "fresh") yield* Effect.fromResult(freshIds(rows, fresh))
      }
      const results: Array<readonly [Step, ReadonlyArray<unknown>]> = []
      for (const step of totalSteps(batch, fresh, yield* Clock.currentTimeMillis)) {
        const rows = yield* run(step)
        if (step.rows !== undefined) results.push([step, rows])
      }
      return { fresh, committed: yield* Effect.fromResult(committedOf(results)) }
    })).pipe(orStoreError("writing settlements failed"))

/**
 * The batch on the SQLite writer thread. Its statements go over whole, planned as if every
 * settlement were new; in the rare batch where one is a repeat, the thread rolls back and says
 * which were new, and the batch is planned again for those. Planned afresh on every attempt.
 */
export const runOnThread = (thread: WriterThread): BatchRunner => (batch) =>
  Effect.suspend(() => {
    const events = eventSteps(batch)
    const attempt = (fresh: ReadonlySet<string>, left: number): Effect.Effect<BatchOutcome, StoreError> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const steps = [...events, ...totalSteps(batch, fresh, now)]
      const statements = steps.map((step) => ({
        sql: step.text,
        params: step.params,
        rows: step.rows !== undefined,
        fresh: step.rows === "fresh"
      }))
      return Effect.flatMap(thread.run(statements, fresh.size), (reply) => {
        if (reply._tag === "Mismatch") {
          // A second miss would need another writer inserting the same request ids meanwhile.
          if (left === 0) {
            return Effect.fail(new StoreError({ message: "writing settlements failed: the batch's new settlements kept changing" }))
          }
          const actual = new Set<string>()
          for (const rows of reply.fresh) {
            const added = freshIds(rows, actual)
            if (Result.isFailure(added)) return Effect.fail(added.failure)
          }
          return attempt(actual, left - 1)
        }
        const results: Array<readonly [Step, ReadonlyArray<unknown>]> = []
        steps.forEach((step, i) => {
          const rows = reply.rows[i]
          if (step.rows !== undefined && rows !== undefined && rows !== null) results.push([step, rows])
        })
        return Result.match(committedOf(results), {
          onFailure: (error) => Effect.fail(error),
          onSuccess: (committed) => Effect.succeed({ fresh, committed })
        })
      })
      })
    return attempt(new Set(batch.settles.map((s) => s.settlement.requestId)), 2)
  })

/**
 * Transient failures (a dropped connection, a busy file) are retried; exactly-once makes that safe.
 * Five attempts, 25, 50, 100 and 200 ms apart; the schedule is only built once the first has failed.
 */
const retryPolicy = Schedule.max([Schedule.exponential("50 millis"), Schedule.recurs(3)])
const withRetries = <A>(attempt: Effect.Effect<A, StoreError>): Effect.Effect<A, StoreError> =>
  Effect.catch(attempt, () => Effect.retry(Effect.delay(attempt, "25 millis"), retryPolicy))

/**
 * Most event-loop turns spent gathering one batch: bounds the latency added under load. Gathering
 * stops earlier after two turns in a row bring nothing: under load settlements arrive a turn or
 * two apart, and each batch has a fixed cost (about 0.5 ms with SQLite) that bigger batches share
 * (measured: about 10% less CPU per request than stopping at the first quiet turn).
 */
const MAX_GATHER_TURNS = 8
const QUIET_TURNS = 2

export interface Writer {
  readonly enqueue: (item: WriterItem) => void
  /** Resolves when everything enqueued before it has been written (or has failed). */
  readonly flush: Effect.Effect<void>
}

export const makeWriter = Effect.fnUntraced(function*(options: WriterOptions): Effect.fn.Return<Writer, never, Scope.Scope> {
  const inbox = yield* Queue.unbounded<WriterItem>()
  const process = (items: ReadonlyArray<WriterItem>): Effect.Effect<void> => {
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
    const flushed = () => {
      for (const f of flushes) Deferred.doneUnsafe(f.done, Exit.void)
    }
    const bookkeeping = (committed: Committed | undefined): Effect.Effect<void> =>
      Effect.suspend(() => {
        const done = options.onBatch(committed, settles, repeats)
        return done === undefined ? Effect.void : done
      })
    const failed = (error: StoreError) =>
      Effect.sync(() => {
        const failure = Exit.fail(error)
        for (const s of settles) s.done(failure)
        for (const s of repeats) s.done(failure)
        flushed()
      })
    const failAll = (error: StoreError) => Effect.andThen(bookkeeping(undefined), failed(error))
    const write = Effect.suspend(() => {
      const opens = options.dueMarkers()
      if (opens.length + settles.length + closes.length === 0) return Effect.sync(flushed)
      return Effect.matchCauseEffect(withRetries(options.runBatch({ opens, settles, closes })), {
        onSuccess: ({ committed, fresh }) =>
          Effect.andThen(bookkeeping(committed), Effect.sync(() => {
            // Each settle resumes its waiting request.
            for (const s of settles) {
              s.done(Exit.succeed(
                fresh.has(s.settlement.requestId) ? { cost: s.cost, priceFallback: s.priceFallback === true } : notCharged
              ))
            }
            for (const s of repeats) s.done(Exit.succeed(notCharged))
            flushed()
          })),
        onFailure: (cause) => {
          const failure = Cause.findErrorOption(cause)
          if (failure._tag === "None") return Effect.failCause(cause)
          return Effect.andThen(
            settles.length === 0 ? Effect.logWarning("recording open requests failed", failure.value) : Effect.void,
            failAll(failure.value)
          )
        }
      })
    })
    // A bug here must not stop the writer (every later settlement would wait forever). A settle
    // already resumed ignores a second answer.
    return Effect.catchCause(write, (cause) =>
      Effect.andThen(
        Effect.logError("the settlement writer failed on a batch", cause),
        // Their callers are answered even if the bookkeeping is what failed.
        Effect.andThen(
          Effect.ignoreCause(bookkeeping(undefined)),
          failed(new StoreError({ message: "internal error while writing settlements" }))
        )
      ))
  }
  // Only the wait for a first item is interruptible: once items are out of the inbox, their
  // batch is gathered and written, also during shutdown, because their callers are waiting.
  const nextBatch = Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      restore(Queue.takeBetween(inbox, 1, options.maxBatch)),
      (first) => Effect.flatMap(gatherMore(inbox, first, options.maxBatch, MAX_GATHER_TURNS, QUIET_TURNS), process)
    )
  )
  yield* nextBatch.pipe(Effect.forever, Effect.forkScoped)
  const flush = Effect.suspend(() => {
    const done = Deferred.makeUnsafe<void>()
    Queue.offerUnsafe(inbox, { _tag: "Flush", done })
    return Deferred.await(done)
  })
  return { enqueue: (item) => void Queue.offerUnsafe(inbox, item), flush }
})
