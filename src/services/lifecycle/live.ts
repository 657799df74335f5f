/**
 * The Lifecycle `npm start` uses (services/lifecycle/Lifecycle.ts is the contract): the drain
 * deadline is a DrainSignal fired once the drain time after `beginShutdown` has passed on the
 * Clock, and the layer says "modelgate stopped" when it is released after a shutdown.
 */
import { Deferred, Effect, Layer } from "effect"
import { Lifecycle, type LifecycleShape } from "./Lifecycle.js"

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

/** The Lifecycle of a process; its drain deadline is a DrainSignal of its own. */
export const layer: Layer.Layer<Lifecycle> = Layer.effect(
  Lifecycle,
  Effect.tap(Effect.sync(() => lifecycleOf(new DrainSignal())), (lifecycle) => Effect.addFinalizer(() => stoppedLine(lifecycle)))
)
