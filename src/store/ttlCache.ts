/**
 * A small read-through cache with a time to live, for the store's hot lookups (the key by hash,
 * its quota, the balance, the subscription): a hit is a Map lookup and `Effect.succeed`.
 *
 * Effect's `Cache` does more (concurrent misses of one key share one lookup, LRU by access) and
 * costs several microseconds per hit in fiber work; a request makes three or four hits. Here
 * concurrent misses of one key may each ask the database once, which only happens when a key is
 * first seen or its entry has just expired. Failed lookups are not kept.
 */
import { Effect } from "effect"

interface Entry<V> {
  readonly value: V
  readonly expiresAt: number
}

export class TtlCache<K, V, E> {
  private readonly entries = new Map<K, Entry<V>>()

  constructor(
    private readonly lookup: (key: K) => Effect.Effect<V, E>,
    private readonly ttlMillis: number,
    private readonly capacity: number,
    /** The current time in ms: the store passes its Clock's, so a TestClock expires entries. */
    private readonly now: () => number = Date.now
  ) {}

  /** The value, from the cache while fresh, else from the lookup (and then cached). */
  get(key: K): Effect.Effect<V, E> {
    const hit = this.peek(key)
    if (hit !== undefined) return Effect.succeed(hit.value)
    return Effect.tap(this.lookup(key), (value) => Effect.sync(() => this.set(key, value)))
  }

  /** The fresh entry, if there is one; never looks up. */
  peek(key: K): { readonly value: V } | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt > this.now()) return entry
    this.entries.delete(key)
    return undefined
  }

  set(key: K, value: V): void {
    // Re-inserting moves the key to the end; the first key is then the oldest written.
    this.entries.delete(key)
    this.entries.set(key, { value, expiresAt: this.now() + this.ttlMillis })
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next()
      if (oldest.done !== true) this.entries.delete(oldest.value)
    }
  }

  invalidate(key: K): void {
    this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
  }
}
