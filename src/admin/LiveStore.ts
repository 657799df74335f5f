/**
 * LiveStore: the running gateway's store as operator actions see it. Its caches would serve the
 * old state of a revoked key or a zeroed balance until their TTL, and settlements it accepted may
 * not be committed yet; operator reads and changes go through these two hooks. `layer` is over
 * this process's Store; `layerRedis` also tells every other instance (Redis pub/sub), so a key
 * revoked through one instance is refused by all of them at once; `layerNone` is for a process
 * without a Store (the CLI). Should a message be lost, the caches' TTL (STORE_CACHE_TTL_MS, 1 s)
 * still bounds how long an instance serves the old state.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import type { Redis } from "ioredis"
import type { StoreError } from "../domain/errors.js"
import { openConnection, redisError } from "../services/scheduler/redisClient.js"
import { Store } from "../store/Store.js"

/** The channel instances announce operator changes on; the message is only a nudge. */
export const CHANGES_CHANNEL = "modelgate:operator-changes"

/** Tells every instance (this one too) that something changed; a failure is logged, the TTL is the backstop. */
const publish = (publisher: Redis) =>
  Effect.tryPromise({
    try: () => publisher.publish(CHANGES_CHANNEL, "changed"),
    catch: (e) => redisError("PUBLISH", e)
  }).pipe(
    Effect.asVoid,
    Effect.catch((e) =>
      Effect.logWarning("other instances were not told of an operator change; their caches expire within STORE_CACHE_TTL_MS", e)
    )
  )

export interface LiveStoreShape {
  /** Waits until every settlement accepted so far is committed, so that a read includes it. */
  readonly flush: Effect.Effect<void>
  /** Drops cached keys, quotas, balances and subscriptions after a committed change. */
  readonly forget: Effect.Effect<void>
}

export class LiveStore extends Context.Service<LiveStore, LiveStoreShape>()("modelgate/LiveStore") {
  static readonly layer: Layer.Layer<LiveStore, never, Store> = Layer.effect(
    LiveStore,
    Effect.map(Store, (store) => ({ flush: store.flush, forget: store.forgetCached }))
  )
  static readonly layerRedis = (url: Redacted.Redacted<string>): Layer.Layer<LiveStore, StoreError, Store> =>
    Layer.effect(
      LiveStore,
      Effect.gen(function*() {
        const store = yield* Store
        const publisher = yield* openConnection(Redacted.value(url), "operator-changes")
        const subscriber = yield* openConnection(Redacted.value(url), "operator-changes-events")
        const runFork = Effect.runForkWith(yield* Effect.context<never>())
        // Every instance, this one too, drops its caches when any instance announces a change.
        subscriber.on("message", () => runFork(store.forgetCached))
        yield* Effect.tryPromise({ try: () => subscriber.subscribe(CHANGES_CHANNEL), catch: (e) => redisError("SUBSCRIBE", e) })
        return { flush: store.flush, forget: Effect.andThen(store.forgetCached, publish(publisher)) }
      })
    )

  /** For a process with no Store of its own (the CLI): only tells the running instances. */
  static readonly layerAnnounce = (url: Redacted.Redacted<string>): Layer.Layer<LiveStore, StoreError> =>
    Layer.effect(
      LiveStore,
      Effect.map(openConnection(Redacted.value(url), "operator-changes"), (publisher) => ({
        flush: Effect.void,
        forget: publish(publisher)
      }))
    )

  static readonly layerNone: Layer.Layer<LiveStore> = Layer.succeed(LiveStore, { flush: Effect.void, forget: Effect.void })
}
