/**
 * src/services/slots.ts: counting slots held by scopes, a bounded FIFO queue, timeouts and
 * interruptions that never strand a slot. Runs on the TestClock (it.effect).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import { type SlotRefusal, SlotPools } from "../../src/services/scheduler/slots.js"

const ID = "key:test"
const opts = (queueLimit: number, waitMillis = 1_000) => ({ queueLimit, wait: `${waitMillis} millis` as const })

/** Acquires a slot into a fresh scope; returns the scope (close it to release). */
const hold = (pools: SlotPools, limit: number, queueLimit = 10, waitMillis = 1_000) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* pools.acquire(ID, limit, opts(queueLimit, waitMillis)).pipe(Scope.provide(scope))
    return scope
  })

/** Lets forked fibers run up to their next suspension. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("SlotPools", () => {
  it.effect("grants up to the limit at once and counts them", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const a = yield* hold(pools, 2)
      const b = yield* hold(pools, 2)
      expect(pools.stats(ID)).toEqual({ inUse: 2, waiting: 0 })
      expect(pools.hasFree(ID, 2)).toBe(false)
      yield* Scope.close(a, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 0 })
      yield* Scope.close(b, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("hands a released slot to the waiters in arrival order", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1)
      const order: Array<string> = []
      const waiter = (name: string) =>
        hold(pools, 1).pipe(Effect.tap(() => Effect.sync(() => order.push(name))), Effect.forkChild)
      const first = yield* waiter("first")
      yield* settle
      const second = yield* waiter("second")
      yield* settle
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 2 })

      yield* Scope.close(holder, Exit.void)
      const firstScope = yield* Fiber.join(first)
      yield* settle
      expect(order).toEqual(["first"])
      // The slot went straight to the waiter: it was never free for a newcomer to grab.
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 1 })
      const scope = yield* Scope.make()
      expect(yield* pools.tryAcquire(ID, 1).pipe(Scope.provide(scope))).toBe(false)

      yield* Scope.close(firstScope, Exit.void)
      const secondScope = yield* Fiber.join(second)
      expect(order).toEqual(["first", "second"])
      yield* Scope.close(secondScope, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("refuses at once when the queue is full", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1, 1)
      const waiting = yield* Effect.forkChild(hold(pools, 1, 1))
      yield* settle
      const refused = yield* Effect.flip(hold(pools, 1, 1))
      expect(refused).toEqual<SlotRefusal>({ _tag: "QueueFull" })
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 1 })
      yield* Scope.close(holder, Exit.void)
      yield* Scope.close(yield* Fiber.join(waiting), Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("a queue limit of 0 means no waiting at all", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1, 0)
      expect(yield* Effect.flip(hold(pools, 1, 0))).toEqual({ _tag: "QueueFull" })
      yield* Scope.close(holder, Exit.void)
    }))

  it.effect("a waiter that times out leaves the queue and takes nothing with it", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1)
      const waiter = yield* Effect.forkChild(Effect.flip(hold(pools, 1, 10, 500)))
      yield* settle
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 1 })
      yield* TestClock.adjust("499 millis")
      expect(waiter.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(waiter)).toEqual<SlotRefusal>({ _tag: "WaitTimedOut" })
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 0 })
      yield* Scope.close(holder, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("a waiter interrupted while waiting leaves the counts as they were", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1)
      const waiter = yield* Effect.forkChild(hold(pools, 1))
      const behind = yield* Effect.forkChild(hold(pools, 1))
      yield* settle
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 2 })
      yield* Fiber.interrupt(waiter)
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 1 })
      // The slot goes to the one still waiting, not to the interrupted fiber.
      yield* Scope.close(holder, Exit.void)
      const scope = yield* Fiber.join(behind)
      expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 0 })
      yield* Scope.close(scope, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("a release and a timeout at the same instant never strand a slot", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const holder = yield* hold(pools, 1)
      const waiter = yield* Effect.forkChild(Effect.result(hold(pools, 1, 10, 1_000)))
      yield* Effect.forkChild(Effect.sleep("1000 millis").pipe(Effect.andThen(Scope.close(holder, Exit.void))))
      yield* settle
      yield* TestClock.adjust("1000 millis")
      const outcome = yield* Fiber.join(waiter)
      if (Result.isSuccess(outcome)) {
        expect(pools.stats(ID)).toEqual({ inUse: 1, waiting: 0 })
        yield* Scope.close(outcome.success, Exit.void)
      }
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
      // And the pool still works.
      const again = yield* hold(pools, 1)
      yield* Scope.close(again, Exit.void)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("a scope closed by a failure releases its slot too", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const exit = yield* Effect.exit(Effect.scoped(
        pools.acquire(ID, 1, opts(1)).pipe(Effect.andThen(Effect.fail("request failed")))
      ))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(pools.stats(ID)).toEqual({ inUse: 0, waiting: 0 })
    }))

  it.effect("pools are independent by id", () =>
    Effect.gen(function*() {
      const pools = new SlotPools()
      const scope = yield* Scope.make()
      yield* pools.acquire("a", 1, opts(0)).pipe(Scope.provide(scope))
      yield* pools.acquire("b", 1, opts(0)).pipe(Scope.provide(scope))
      expect([pools.stats("a").inUse, pools.stats("b").inUse]).toEqual([1, 1])
      yield* Scope.close(scope, Exit.void)
      expect([pools.stats("a").inUse, pools.stats("b").inUse]).toEqual([0, 0])
    }))
})
