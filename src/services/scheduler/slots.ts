/**
 * Counting slots with a bounded FIFO wait queue, in process. A slot, or a place in the queue, is
 * held by a Scope: whatever ends the scope (success, failure, client abort, shutdown) gives it back.
 * A waiter that leaves early (timeout, interruption) never strands a slot that was handed to it: a
 * released slot goes straight to the first waiter, and a waiter that is handed one as it gives up
 * passes it on.
 */
import { Deferred, Duration, Effect, Scope } from "effect"
import type { Entry, PoolStats } from "./store.js"

/**
 * Gives a slot back when the request's Scope closes. A plain Scope finalizer: the release is
 * synchronous and needs nothing from the request's context, which Effect.addFinalizer would
 * capture and merge back in (a copy of every service of the app, per finalizer).
 */
const onScopeClose = (release: Effect.Effect<void>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, release))

interface Waiter {
  readonly turn: Deferred.Deferred<void>
  state: "waiting" | "holding" | "done"
}

interface Pool {
  inUse: number
  readonly waiters: Array<Waiter>
}

export type SlotRefusal = { readonly _tag: "QueueFull" } | { readonly _tag: "WaitTimedOut" }

export interface SlotStats {
  readonly inUse: number
  readonly waiting: number
}

const FULL: Entry = { _tag: "Full" }

export class SlotPools {
  private readonly pools = new Map<string, Pool>()

  private pool(id: string): Pool {
    let p = this.pools.get(id)
    if (!p) this.pools.set(id, p = { inUse: 0, waiters: [] })
    return p
  }

  stats(id: string): SlotStats {
    const p = this.pools.get(id)
    return { inUse: p?.inUse ?? 0, waiting: p?.waiters.length ?? 0 }
  }

  /** Every pool seen so far, busy or not. */
  all(): Array<PoolStats> {
    const out: Array<PoolStats> = []
    for (const [pool, p] of this.pools) out.push({ pool, inUse: p.inUse, waiting: p.waiters.length })
    return out
  }

  hasFree(id: string, limit: number): boolean {
    return this.stats(id).inUse < limit
  }

  private release(p: Pool): void {
    const next = p.waiters.shift()
    // Hand the slot straight to the first waiter, so a burst of newcomers cannot overtake it.
    if (next) {
      next.state = "holding"
      Deferred.doneUnsafe(next.turn, Effect.void)
    } else p.inUse = Math.max(0, p.inUse - 1)
  }

  /** Gives back whatever the waiter holds: its place in the queue, or the slot it was handed. */
  private leave(p: Pool, w: Waiter): void {
    if (w.state === "waiting") {
      const i = p.waiters.indexOf(w)
      if (i >= 0) p.waiters.splice(i, 1)
    } else if (w.state === "holding") this.release(p)
    w.state = "done"
  }

  private await(p: Pool, w: Waiter, millis: number): Effect.Effect<boolean> {
    return Effect.suspend(() => {
      if (w.state !== "waiting") return Effect.succeed(w.state === "holding")
      return Deferred.await(w.turn).pipe(
        Effect.timeoutOption(Duration.millis(millis)),
        // Handed the slot in the same instant the wait ran out: it is ours, keep it.
        Effect.map((ok) => ok._tag === "Some" || w.state === "holding"),
        Effect.tap((ok) => (ok ? Effect.void : Effect.sync(() => this.leave(p, w)))),
        Effect.onInterrupt(() => Effect.sync(() => this.leave(p, w)))
      )
    })
  }

  /**
   * A slot now, else a place in the queue when fewer than `queueLimit` wait (negative: never queue).
   * Synchronous and uninterruptible, so the finalizer that gives it back is always in place.
   */
  enter(id: string, limit: number, queueLimit: number): Effect.Effect<Entry, never, Scope.Scope> {
    return Effect.uninterruptible(
      Effect.suspend(() => {
        const p = this.pool(id)
        if (p.inUse < limit && p.waiters.length === 0) {
          p.inUse++
          let held = true
          const release = Effect.sync(() => {
            if (!held) return
            held = false
            this.release(p)
          })
          return Effect.as(onScopeClose(release), { _tag: "Granted", release } satisfies Entry)
        }
        if (p.waiters.length >= queueLimit) return Effect.succeed(FULL)
        const w: Waiter = { turn: Deferred.makeUnsafe<void>(), state: "waiting" }
        p.waiters.push(w)
        // Leaving is once only: a waiter that is done gives back nothing more.
        const leave = Effect.sync(() => this.leave(p, w))
        const queued: Entry = { _tag: "Queued", wait: (millis) => this.await(p, w, millis), release: leave }
        return Effect.as(onScopeClose(leave), queued)
      })
    )
  }

  /** Takes a slot now if one is free; never waits. */
  tryAcquire(id: string, limit: number): Effect.Effect<boolean, never, Scope.Scope> {
    return Effect.map(this.enter(id, limit, -1), (e) => e._tag === "Granted")
  }

  /** A slot for the current scope, waiting in the queue up to `wait`. */
  acquire(
    id: string,
    limit: number,
    options: { readonly queueLimit: number; readonly wait: Duration.Input }
  ): Effect.Effect<void, SlotRefusal, Scope.Scope> {
    return Effect.flatMap(this.enter(id, limit, options.queueLimit), (entry) => {
      if (entry._tag === "Granted") return Effect.void
      if (entry._tag === "Full") return Effect.fail<SlotRefusal>({ _tag: "QueueFull" })
      return Effect.flatMap(
        // The wait never fails in process; the store contract allows it for Redis.
        Effect.orDie(entry.wait(Duration.toMillis(options.wait))),
        (held) => (held ? Effect.void : Effect.fail<SlotRefusal>({ _tag: "WaitTimedOut" }))
      )
    })
  }
}
