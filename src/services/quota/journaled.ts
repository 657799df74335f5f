/**
 * A Quota whose settlements are not lost while its store is away: a settlement the store refuses
 * (StoreError: unreachable, timed out, shut down) goes to the SettlementJournal instead, and is
 * answered `journaled`. A fiber replays the journal into the store: at once on start (a journal
 * left by an earlier process), and whenever something is pending, retrying with a backoff while
 * the store still refuses.
 *
 * Exactly once: a replayed settlement goes through the inner Quota's `settle`, idempotent per
 * request id (the store's usage_events key). A settlement the store has already (committed, then
 * the process stopped before the journal forgot it; a replay racing a live settle) is a repeat the
 * store ignores and the journal forgets like any other. A settlement is forgotten only after the
 * store has answered for it, so a crash mid-replay loses nothing.
 *
 * Eligibility, reports and tracking are the inner Quota's. A journaled cost is not counted in the
 * eligibility figures until it is replayed: while the store is away those figures are cached ones.
 * The replay charges at the store's prices when it runs, with the principal (group rate, billing)
 * the request had.
 */
import { Duration, Effect, Layer, Metric, Option, Result } from "effect"
import { costMicrosTotal, settlementsReplayed, taggedCounters } from "../../observability/metrics.js"
import { type JournalError, type Settlement as JournalSettlement, SettlementJournal } from "../journal/SettlementJournal.js"
import { type Charged, Quota, type QuotaShape, type Settlement } from "./Quota.js"

export interface JournaledOptions {
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

// The journal's Settlement and the Quota's are one shape: a change to either fails to compile here.
const sameShape: [(s: Settlement) => JournalSettlement, (s: JournalSettlement) => Settlement] = [(s) => s, (s) => s]
void sameShape

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

export const make = (inner: QuotaShape, journal: SettlementJournal["Service"], options: JournaledOptions = {}) =>
  Effect.gen(function*() {
    const retryMillis = options.retryMillis ?? 500
    const maxRetryMillis = Math.max(retryMillis, options.maxRetryMillis ?? 5_000)
    const batch = Math.max(1, options.batch ?? 256)

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

    return Quota.of({
      ...inner,
      settle: (s) =>
        inner.settle(s).pipe(
          Effect.catchTag("StoreError", (storeError) =>
            journal.append(s).pipe(
              Effect.as(journaledCharge),
              Effect.tap(() =>
                Effect.logInfo("settlement journaled: the store refused it; it is written when the store takes it").pipe(
                  Effect.annotateLogs({ ...settlementLog(s), error: storeError.message, journal: journal.location })
                )
              ),
              // The journal failing too is the original failure's to report (core/settlement.ts logs it).
              Effect.catch((journalError: JournalError) =>
                Effect.andThen(
                  Effect.logError("settlement journal: could not write", journalError).pipe(Effect.annotateLogs(settlementLog(s))),
                  Effect.fail(storeError)
                )
              )
            )
          )
        )
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
