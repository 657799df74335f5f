/**
 * Lifecycle: the shutdown signal streams listen to. On SIGTERM the server stops accepting; running
 * streams may finish until the drain deadline, when this fires and they end with response.failed.
 * From the moment shutdown begins the gateway is draining: /readyz says so (`shuttingDown`).
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
 * A one-shot signal, to await as an Effect or to watch with a callback: what an implementation
 * uses inside when it has many things to end at one moment (the HTTP upstream's open bodies)
 * and would rather not run a fiber for each.
 */
export class DrainSignal {
  private readonly deferred = Deferred.makeUnsafe<void>()
  private readonly callbacks = new Set<() => void>()
  private fired = false

  readonly await: Effect.Effect<void> = Deferred.await(this.deferred)

  /** Calls back when fired (at once if it has been); returns the unsubscribe. */
  watch(callback: () => void): () => void {
    if (this.fired) {
      callback()
      return () => {}
    }
    this.callbacks.add(callback)
    return () => {
      this.callbacks.delete(callback)
    }
  }

  get isFired(): boolean {
    return this.fired
  }

  /** How many callbacks are waiting. */
  get watchers(): number {
    return this.callbacks.size
  }

  fire(): void {
    if (this.fired) return
    this.fired = true
    for (const callback of this.callbacks) callback()
    this.callbacks.clear()
    Deferred.doneUnsafe(this.deferred, Effect.void)
  }
}

/** A Lifecycle whose drain deadline is `signal`; beginShutdown fires it after the drain time. */
export const lifecycleOf = (signal: DrainSignal): LifecycleShape => {
  let started = false
  let cut = 0
  const begun = new DrainSignal()
  return {
    noteStreamCut: () => void cut++,
    streamsCut: () => cut,
    shutdownBegun: begun.await,
    drainDeadline: signal.await,
    pastDrainDeadline: () => signal.isFired,
    shuttingDown: () => started,
    beginShutdown: (drainSeconds) =>
      Effect.suspend(() => {
        if (started) return Effect.void
        started = true
        begun.fire()
        return Effect.sleep(`${drainSeconds} seconds`).pipe(
          Effect.andThen(Effect.sync(() => signal.fire())),
          Effect.forkDetach,
          Effect.asVoid
        )
      })
  }
}

/**
 * Once everything above it is released (the server closed, the store and the journal flushed), a
 * gateway that was shut down says so in one line, with the streams the deadline cut.
 */
const stoppedLine = (lifecycle: LifecycleShape) =>
  Effect.suspend(() =>
    lifecycle.shuttingDown()
      ? Effect.logInfo("modelgate stopped").pipe(Effect.annotateLogs({ streams_cut: lifecycle.streamsCut() }))
      : Effect.void
  )

export class Lifecycle extends Context.Service<Lifecycle, LifecycleShape>()("modelgate/Lifecycle") {
  static readonly layer = Layer.effect(
    Lifecycle,
    Effect.tap(Effect.sync(() => lifecycleOf(new DrainSignal())), (lifecycle) => Effect.addFinalizer(() => stoppedLine(lifecycle)))
  )
  /**
   * For tests: the drain deadline is `signal` (fire it by hand to end running streams now);
   * `beginShutdown`'s drain time runs on the Clock, so TestClock can pass it too.
   */
  static readonly layerTest = (signal?: DrainSignal): Layer.Layer<Lifecycle> =>
    Layer.sync(Lifecycle, () => lifecycleOf(signal ?? new DrainSignal()))
}
