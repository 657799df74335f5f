/**
 * Lifecycle: the shutdown signal streams listen to. On SIGTERM the server stops accepting; running
 * streams may finish until the drain deadline, when this fires and they end with response.failed.
 */
import { Context, Deferred, Effect, Layer } from "effect"

export interface LifecycleShape {
  /** Completes when running streams must end now. */
  readonly drainDeadline: Effect.Effect<void>
  /**
   * Calls back when running streams must end now (at once if they already must); returns the
   * unsubscribe. The stream pump uses this rather than racing `drainDeadline`, which would fork
   * two fibers per stream.
   */
  readonly onDrainDeadline: (callback: () => void) => () => void
  /** Starts the drain clock (idempotent). */
  readonly beginShutdown: (drainSeconds: number) => Effect.Effect<void>
}

const make = Effect.map(Deferred.make<void>(), (deadline): LifecycleShape => {
  let started = false
  let passed = false
  const callbacks = new Set<() => void>()
  const fire = Effect.sync(() => {
    passed = true
    for (const callback of callbacks) callback()
    callbacks.clear()
  })
  return {
    drainDeadline: Deferred.await(deadline),
    onDrainDeadline: (callback) => {
      if (passed) {
        callback()
        return () => {}
      }
      callbacks.add(callback)
      return () => callbacks.delete(callback)
    },
    beginShutdown: (drainSeconds) =>
      Effect.suspend(() => {
        if (started) return Effect.void
        started = true
        return Effect.sleep(`${drainSeconds} seconds`).pipe(
          Effect.zipRight(fire),
          Effect.zipRight(Deferred.succeed(deadline, undefined)),
          Effect.forkDaemon,
          Effect.asVoid
        )
      })
  }
})

export class Lifecycle extends Context.Tag("modelgate/Lifecycle")<Lifecycle, LifecycleShape>() {
  static readonly layer = Layer.effect(Lifecycle, make)
}
