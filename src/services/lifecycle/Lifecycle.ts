/**
 * Lifecycle: the shutdown signal streams listen to. On SIGTERM the server stops accepting; running
 * streams may finish until the drain deadline, when this fires and they end with response.failed.
 * From the moment shutdown begins the gateway is draining: /readyz says so (`shuttingDown`).
 *
 * This is the contract and a test layer; live.ts is the implementation `npm start` uses.
 */
import { Context, Deferred, Effect, Layer } from "effect"

export interface LifecycleShape {
  /** Completes when running streams must end now. */
  readonly drainDeadline: Effect.Effect<void>
  /** Whether running streams must end now (the drain deadline has passed). */
  readonly pastDrainDeadline: () => boolean
  /** Whether shutdown has begun (`beginShutdown` was called): the gateway is draining. */
  readonly shuttingDown: () => boolean
  /** Completes when shutdown begins (long-lived connections finish what runs, then close). */
  readonly shutdownBegun: Effect.Effect<void>
  /** Starts the drain clock (idempotent). */
  readonly beginShutdown: (drainSeconds: number) => Effect.Effect<void>
  /** Notes a stream that was still running at the drain deadline, and so was cut. */
  readonly noteStreamCut: () => void
  /** How many streams the drain deadline cut. */
  readonly streamsCut: () => number
}

/**
 * The test layer's Lifecycle: the drain time runs on the Clock (TestClock passes it), and the
 * drain deadline is a Deferred.
 */
const makeTest = (): LifecycleShape => {
  const deadline = Deferred.makeUnsafe<void>()
  const begun = Deferred.makeUnsafe<void>()
  let started = false
  let past = false
  let cut = 0
  return {
    noteStreamCut: () => void cut++,
    streamsCut: () => cut,
    shutdownBegun: Deferred.await(begun),
    drainDeadline: Deferred.await(deadline),
    pastDrainDeadline: () => past,
    shuttingDown: () => started,
    beginShutdown: (drainSeconds) =>
      Effect.suspend(() => {
        if (started) return Effect.void
        started = true
        Deferred.doneUnsafe(begun, Effect.void)
        const fire = Effect.sync(() => {
          past = true
          Deferred.doneUnsafe(deadline, Effect.void)
        })
        return Effect.asVoid(Effect.forkDetach(Effect.andThen(Effect.sleep(`${drainSeconds} seconds`), fire)))
      })
  }
}

export class Lifecycle extends Context.Service<Lifecycle, LifecycleShape>()("modelgate/Lifecycle") {
  /** For tests: `beginShutdown`'s drain time runs on the Clock, so TestClock can pass it. */
  static readonly layerTest = (): Layer.Layer<Lifecycle> => Layer.sync(Lifecycle, makeTest)
}
