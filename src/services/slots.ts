/**
 * Counting slots with a bounded FIFO wait queue. A slot is held by a Scope: whatever ends the scope
 * (success, failure, client abort, shutdown) gives it back, and a waiter that leaves early
 * (timeout, interruption) never strands a slot that was handed to it.
 */
import { Deferred, type Duration, Effect, FiberId, type Scope } from "effect"

interface Pool {
  inUse: number
  readonly waiters: Array<Deferred.Deferred<void>>
}

export type SlotRefusal = { readonly _tag: "QueueFull" } | { readonly _tag: "WaitTimedOut" }

export interface SlotStats {
  readonly inUse: number
  readonly waiting: number
}

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

  hasFree(id: string, limit: number): boolean {
    return this.stats(id).inUse < limit
  }

  private release(id: string): void {
    const p = this.pool(id)
    const next = p.waiters.shift()
    // Hand the slot straight to the first waiter, so a burst of newcomers cannot overtake it.
    if (next) Deferred.unsafeDone(next, Effect.void)
    else p.inUse = Math.max(0, p.inUse - 1)
  }

  /** Takes a slot now if one is free; never waits. */
  tryAcquire(id: string, limit: number): Effect.Effect<boolean, never, Scope.Scope> {
    return Effect.uninterruptible(
      Effect.suspend(() => {
        const p = this.pool(id)
        if (p.inUse >= limit || p.waiters.length > 0) return Effect.succeed(false)
        p.inUse++
        return Effect.as(Effect.addFinalizer(() => Effect.sync(() => this.release(id))), true)
      })
    )
  }

  acquire(
    id: string,
    limit: number,
    options: { readonly queueLimit: number; readonly wait: Duration.DurationInput }
  ): Effect.Effect<void, SlotRefusal, Scope.Scope> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const p = this.pool(id)
        const held = Effect.addFinalizer(() => Effect.sync(() => this.release(id)))
        if (p.inUse < limit && p.waiters.length === 0) {
          p.inUse++
          return held
        }
        if (p.waiters.length >= options.queueLimit) return Effect.fail<SlotRefusal>({ _tag: "QueueFull" })
        const turn = Deferred.unsafeMake<void>(FiberId.none)
        p.waiters.push(turn)
        const leave = Effect.sync(() => {
          const i = p.waiters.indexOf(turn)
          if (i >= 0) p.waiters.splice(i, 1)
          // Handed a slot in the same tick we gave up: pass it on rather than leak it.
          else this.release(id)
        })
        return restore(Deferred.await(turn)).pipe(
          Effect.timeoutFail({ duration: options.wait, onTimeout: (): SlotRefusal => ({ _tag: "WaitTimedOut" }) }),
          Effect.onExit((exit) => (exit._tag === "Failure" ? leave : Effect.void)),
          Effect.zipRight(held)
        )
      })
    )
  }
}
