/**
 * SettlementJournal: where a settlement goes when the store cannot take it, so that no usage is
 * lost while the database is away. Durable once `append` succeeds; what is pending is written to
 * the store later (services/quota/journaled.ts), and `remove`d once the store has it.
 *
 * Exactly once rests on the store, not here: the store keys usage by request id and ignores a
 * repeat, so an entry written to the store and still pending (a crash between the two) is
 * harmless when it is replayed.
 *
 * This is the contract and an in-memory layer for tests; file.ts is the durable one.
 */
import { Context, Effect, Latch, Layer, Metric, Schema } from "effect"
import type { Settlement } from "../../domain/settlement.js"
import { settlementJournalDepth } from "../../observability/metrics.js"

/** The journal could not be read or written (the disk is full, the path is not writable). */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

export interface SettlementJournalShape {
  /** Durable when it succeeds. A request id already pending is not added again. */
  readonly append: (s: Settlement) => Effect.Effect<void, JournalError>
  /** What is pending, oldest first. */
  readonly pending: Effect.Effect<ReadonlyArray<Settlement>>
  /** The store has these (committed now or before): no longer pending. */
  readonly remove: (requestIds: ReadonlyArray<string>) => Effect.Effect<void, JournalError>
  /** How many settlements are pending now. */
  readonly depth: () => number
  /** Resolves once something is pending (at once if something is). */
  readonly awaitPending: Effect.Effect<void>
  /** Where the journal lives, for logs: a path, or `memory`. */
  readonly location: string
}

/** Sets the depth gauge to what `journal` holds now. */
export const reportDepth = (depth: number): Effect.Effect<void> => Metric.update(settlementJournalDepth, depth)

/** In memory (tests): durable for as long as the layer, which is what a test of replay needs. */
export const makeMemory = Effect.fnUntraced(function*(initial: ReadonlyArray<Settlement> = []): Effect.fn.Return<SettlementJournalShape> {
  const pending = new Map<string, Settlement>(initial.map((s) => [s.requestId, s]))
  const nonEmpty = yield* Latch.make(pending.size > 0)
  return {
    append: (s) =>
      Effect.suspend(() => {
        if (!pending.has(s.requestId)) pending.set(s.requestId, s)
        nonEmpty.openUnsafe()
        return reportDepth(pending.size)
      }),
    pending: Effect.sync(() => [...pending.values()]),
    remove: (ids) =>
      Effect.suspend(() => {
        for (const id of ids) pending.delete(id)
        if (pending.size === 0) nonEmpty.closeUnsafe()
        return reportDepth(pending.size)
      }),
    depth: () => pending.size,
    awaitPending: nonEmpty.await,
    location: "memory"
  }
})

export class SettlementJournal extends Context.Service<SettlementJournal, SettlementJournalShape>()("modelgate/SettlementJournal") {
  /** In memory, starting with `initial` pending. */
  static readonly layerTest = (initial: ReadonlyArray<Settlement> = []): Layer.Layer<SettlementJournal> =>
    Layer.effect(SettlementJournal, makeMemory(initial))
}
