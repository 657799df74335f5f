/**
 * LiveStore: the running gateway's store as operator actions see it. Its caches would serve the
 * old state of a revoked key or a zeroed balance until their TTL, and settlements it accepted may
 * not be committed yet; operator reads and changes go through these two hooks. `layer` is over
 * this process's Store; `layerNone` is for a process without one (the CLI).
 */
import { Context, Effect, Layer } from "effect"
import { Store } from "../store/Store.js"

export interface LiveStoreShape {
  /** Waits until every settlement accepted so far is committed, so that a read includes it. */
  readonly flush: Effect.Effect<void>
  /** Drops cached keys, quotas, balances and subscriptions after a committed change. */
  readonly forget: Effect.Effect<void>
}

export class LiveStore extends Context.Tag("modelgate/LiveStore")<LiveStore, LiveStoreShape>() {
  static readonly layer: Layer.Layer<LiveStore, never, Store> = Layer.effect(
    LiveStore,
    Effect.map(Store, (store) => ({ flush: store.flush, forget: store.forgetCached }))
  )
  static readonly layerNone: Layer.Layer<LiveStore> = Layer.succeed(LiveStore, { flush: Effect.void, forget: Effect.void })
}
