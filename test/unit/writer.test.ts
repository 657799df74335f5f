/**
 * src/store/writer.ts with a batch runner of the test's own: a failing batch fails its settlements
 * with a StoreError after the retries, and a bug (a defect, in the runner or in the batch's
 * bookkeeping) fails that batch without stopping the writer: later settlements still land.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { StoreError } from "../../src/domain/errors.js"
import type { Settlement } from "../../src/domain/settlement.js"
import type { Charged } from "../../src/services/quota/Quota.js"
import type { BatchOutcome } from "../../src/store/batch.js"
import { type BatchRunner, makeWriter, type SettleItem } from "../../src/store/writer.js"

const settlement = (requestId: string) => ({ requestId }) as unknown as Settlement

/** Settles one request through the writer; resolves with the cost its batch answered. */
const settle = (enqueue: (item: SettleItem) => void, requestId: string) =>
  Effect.callback<Charged, StoreError>((resume) => {
    enqueue({ _tag: "Settle", settlement: settlement(requestId), cost: 7, closesMarker: false, done: resume })
  }).pipe(Effect.map((charged) => charged.cost))

const succeeded = (requestIds: ReadonlyArray<string>): BatchOutcome => ({
  fresh: new Set(requestIds),
  committed: { balances: [], keys: [], subscriptions: [] }
})

const failureOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Option.getOrNull(Cause.findErrorOption(exit.cause)) : null

describe("settlement writer", () => {
  it.live("retries a failing batch, then fails its settlements with a StoreError", () =>
    Effect.gen(function*() {
      let attempts = 0
      const runBatch: BatchRunner = () =>
        Effect.suspend(() => {
          attempts++
          return Effect.fail(new StoreError({ message: "disk on fire" }))
        })
      const writer = yield* makeWriter({ maxBatch: 10, runBatch, onBatch: () => {}, dueMarkers: () => [] })
      const exit = yield* Effect.exit(settle(writer.enqueue, "r-1"))
      expect(failureOf(exit)).toMatchObject({ _tag: "StoreError", message: "disk on fire" })
      expect(attempts).toBe(5)
    }).pipe(Effect.scoped))

  it.live("survives a bug in a batch: that batch fails, the next lands", () =>
    Effect.gen(function*() {
      let batches = 0
      const runBatch: BatchRunner = (batch) =>
        Effect.suspend(() => {
          batches++
          if (batches === 1) return Effect.die(new Error("a bug in the runner"))
          return Effect.succeed(succeeded(batch.settles.map((s) => s.settlement.requestId)))
        })
      let bookkeeping = 0
      const onBatch = () => {
        // The second batch's bookkeeping throws once: a bug after the commit.
        if (++bookkeeping === 3) throw new Error("a bug in the bookkeeping")
      }
      const writer = yield* makeWriter({ maxBatch: 10, runBatch, onBatch, dueMarkers: () => [] })
      const first = yield* Effect.exit(settle(writer.enqueue, "r-1"))
      expect(failureOf(first)).toMatchObject({ _tag: "StoreError", message: "internal error while writing settlements" })
      expect(yield* settle(writer.enqueue, "r-2")).toBe(7)
      const third = yield* Effect.exit(settle(writer.enqueue, "r-3"))
      expect(failureOf(third)).toMatchObject({ _tag: "StoreError" })
      expect(yield* settle(writer.enqueue, "r-4")).toBe(7)
      yield* writer.flush
    }).pipe(Effect.scoped))
})
