/**
 * A Quota whose settlements are not lost while its store is away: a settlement the store refuses
 * (StoreError: unreachable, timed out, shut down), or has not confirmed within `settleTimeoutMillis`,
 * goes to the SettlementJournal instead, and is answered `journaled`. A stalled store refuses only
 * after its writer has tried a batch several times, with batches queued behind it: until then the
 * settlement would live only in memory, and a crash would lose it. A fiber replays the journal into
 * the store: at once on start (a journal left by an earlier process), and whenever something is
 * pending, retrying with a backoff while the store still refuses.
 *
 * Exactly once: a replayed settlement goes through the inner Quota's `settle`, idempotent per
 * request id (the store's usage_events key). A settlement the store has already (committed, then
 * the process stopped before the journal forgot it; a replay racing a live settle) is a repeat the
 * store ignores and the journal forgets like any other. So is a settlement journaled because the
 * store was slow, which the store may still commit: it is left to finish, and its cost is counted
 * if it does. A settlement is forgotten only after the store has answered for it, so a crash
 * mid-replay loses nothing.
 *
 * Eligibility, reports and tracking are the inner Quota's. A journaled cost is not counted in the
 * eligibility figures until it is replayed: while the store is away those figures are cached ones.
 * The replay charges at the store's prices when it runs, with the principal (group rate, billing)
 * the request had.
 */
import { Duration, Effect, Exit, Fiber, Layer, Metric, Option, Result } from "effect"
import type { StoreError } from "../../domain/errors.js"
import { costMicrosTotal, settlementsReplayed, taggedCounters } from "../../observability/metrics.js"
import type { Settlement } from "../../domain/settlement.js"
import { type JournalError, SettlementJournal } from "../journal/SettlementJournal.js"
import { type Charged, Quota, type QuotaShape } from "./Quota.js"

export interface JournaledOptions {
  /**
   * How long a settlement waits for the store to confirm it before it is journaled (STORE_TIMEOUT_MS
   * in the SQL store's wiring); 0 or less, or absent: until the store answers.
   */
  readonly settleTimeoutMillis?: number
  /** The first wait before trying again when the store refused a replay (default 500 ms). */
  readonly retryMillis?: number
  /** The longest wait between tries (default 5 s): how long a store that is back may wait for the journal. */
  readonly maxRetryMillis?: number
  /** Most settlements written per replay round (default 256; the store batches them itself). */
  readonly batch?: number
  /**
   * Runs after a round of replayed settlements is in the store, with their request ids (the SQL
   * store's wiring drops their open-request markers: store/openMarkers.ts). A failure is logged.
   */
  readonly onReplayed?: (requestIds: ReadonlyArray<string>) => Effect.Effect<void, unknown>
}

export const journaledCharge: Charged = { cost: 0, priceFallback: false, journaled: true }

const costByGroup = taggedCounters(costMicrosTotal, ["group"])

const settlementLog = (s: Settlement) => ({
  request_id: s.requestId,
  key: s.principal.key.id,
  model: s.model,
  input_tokens: s.usage.inputTokens,
  output_tokens: s.usage.outputTokens,
  estimated: s.estimated === true
})

export const make = Effect.fnUntraced(function*(inner: QuotaShape, journal: SettlementJournal["Service"], options: JournaledOptions = {}) {
  const retryMillis = options.retryMillis ?? 500
  const maxRetryMillis = Math.max(retryMillis, options.maxRetryMillis ?? 5_000)
  const batch = Math.max(1, options.batch ?? 256)
  const settleTimeoutMillis = options.settleTimeoutMillis ?? 0
  /**
   * One round: the oldest pending settlements to the store, concurrently (its writer groups them
   * into transactions). Those it answered for leave the journal; the first refusal is returned.
   */
  const round = Effect.gen(function*() {
    const due = (yield* journal.pending).slice(0, batch)
    if (due.length === 0) return Option.none<unknown>()
    const outcomes = yield* Effect.forEach(due, (s) => Effect.result(inner.settle(s)), { concurrency: "unbounded" })
    const written: Array<string> = []
    let refused: Option.Option<unknown> = Option.none()
    for (let i = 0; i < due.length; i++) {
      const s = due[i]
      const outcome = outcomes[i]
      if (s === undefined || outcome === undefined) continue
      if (Result.isFailure(outcome)) {
        if (Option.isNone(refused)) refused = Option.some(outcome.failure)
        continue
      }
      written.push(s.requestId)
      const { cost } = outcome.success
      // Counted now: core/settlement.ts could not, the cost was not known when the request ended.
      if (cost > 0) yield* Metric.update(costByGroup(s.principal.group.name), cost)
    }
    if (written.length > 0) {
      yield* Metric.update(settlementsReplayed, written.length)
      yield* journal.remove(written).pipe(
        Effect.catch((e: JournalError) =>
          Effect.logWarning("settlement journal: written to the store but not yet forgotten; a later replay repeats them harmlessly", e)
        )
      )
      if (options.onReplayed !== undefined) {
        yield* options.onReplayed(written).pipe(
          Effect.catchCause((cause) => Effect.logWarning("settlement journal: could not close the replayed requests' open markers", cause))
        )
      }
      yield* Effect.logInfo("settlement journal: settlements written to the store").pipe(
        Effect.annotateLogs({ written: written.length, left: journal.depth(), journal: journal.location })
      )
    }
    return refused
  })
  /** Rounds until the journal is empty; after a refusal, waits (doubling, capped) and tries again. */
  const replay = Effect.gen(function*() {
    let wait = retryMillis
    let warned = false
    while (true) {
      yield* journal.awaitPending
      const refused = yield* round
      if (Option.isNone(refused)) {
        wait = retryMillis
        warned = false
        continue
      }
      if (!warned) {
        warned = true
        yield* Effect.logWarning("settlement journal: the store still refuses settlements; trying again").pipe(
          Effect.annotateLogs({ depth: journal.depth(), journal: journal.location, error: String(refused.value) })
        )
      }
      yield* Effect.sleep(Duration.millis(wait))
      wait = Math.min(maxRetryMillis, wait * 2)
    }
  })
  // A bug in a round must not end replay for the life of the process.
  yield* replay.pipe(
    Effect.catchCause((cause) => Effect.logError("settlement journal: replay stopped on an error; restarting it", cause)),
    Effect.andThen(Effect.sleep(Duration.millis(maxRetryMillis))),
    Effect.forever,
    Effect.forkScoped
  )
  /** `s` in the journal; should the journal fail too, `otherwise` (core/settlement.ts logs its failure). */
  const toJournal = <E>(s: Settlement, reason: string, otherwise: Effect.Effect<Charged, E>): Effect.Effect<Charged, E> =>
    journal.append(s).pipe(
      Effect.as(journaledCharge),
      Effect.tap(() =>
        Effect.logInfo("settlement journaled; it is written when the store takes it").pipe(
          Effect.annotateLogs({ ...settlementLog(s), reason, journal: journal.location })
        )
      ),
      Effect.catch((journalError: JournalError) =>
        Effect.andThen(
          Effect.logError("settlement journal: could not write", journalError).pipe(Effect.annotateLogs(settlementLog(s))),
          otherwise
        )
      )
    )
  const refused = (s: Settlement) => (storeError: StoreError) => toJournal(s, storeError.message, Effect.fail(storeError))
  /**
   * The store's answer, or the journal once `settleTimeoutMillis` have passed without one. The
   * store's settle goes on in a fiber of its own: should it commit after all, its cost is counted
   * here (the journal's replay of it is then a repeat, charged and counted nothing); should the
   * journal fail, the store's answer is still awaited.
   */
  const settleWithin = (s: Settlement, millis: number): Effect.Effect<Charged, StoreError> => {
    const count = (cost: number) => (cost > 0 ? Metric.update(costByGroup(s.principal.group.name), cost) : Effect.void)
    let journaled = false
    let committedCost = 0
    const stored = inner.settle(s).pipe(
      Effect.tap(({ cost }) => {
        if (journaled) return count(cost)
        committedCost = cost
        return Effect.void
      })
    )
    return Effect.flatMap(Effect.forkDetach(stored), (fiber) =>
      Effect.flatMap(Effect.timeoutOption(Fiber.await(fiber), millis), (answer) => {
        if (Option.isSome(answer)) {
          const exit = answer.value
          return Exit.isSuccess(exit) ? Effect.succeed(exit.value) : Effect.catchTag(exit, "StoreError", refused(s))
        }
        const awaited = Effect.catchTag(Fiber.join(fiber), "StoreError", refused(s))
        return Effect.tap(toJournal(s, `the store did not confirm it within ${millis} ms`, awaited), (charged) => {
          if (charged.journaled !== true) return Effect.void
          journaled = true
          // Committed while the journal was being written: counted now.
          return count(committedCost)
        })
      }))
  }
  return Quota.of({
    ...inner,
    settle: (s) => settleTimeoutMillis > 0 ? settleWithin(s, settleTimeoutMillis) : inner.settle(s).pipe(Effect.catchTag("StoreError", refused(s)))
  })
})

/**
 * Quota over the Quota it is given (`Layer.provide` the inner one) and a SettlementJournal: the
 * inner's settlements that fail go to the journal and are replayed into it.
 */
export const layer = (options: JournaledOptions = {}): Layer.Layer<Quota, never, Quota | SettlementJournal> =>
  Layer.effect(
    Quota,
    Effect.gen(function*() {
      return yield* make(yield* Quota, yield* SettlementJournal, options)
    })
  )
