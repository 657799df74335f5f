/**
 * src/store/inbox.ts: the settlement writer's batching over its Queue. A batch is everything
 * queued, plus what arrives while the writer keeps gathering over event-loop turns; it stops after
 * quiet turns or at the batch limit; nothing taken is lost when a gathering is interrupted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { gather } from "../../src/store/inbox.js"

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
const newQueue = () => Effect.runSync(Queue.unbounded<number>())
const offer = (q: Queue.Queue<number>, n: number) => Queue.offerUnsafe(q, n)
/** What is left in the queue, without waiting. */
const rest = (q: Queue.Queue<number>) => Effect.runSync(Queue.clear(q))

describe("settlement writer inbox", () => {
  it("waits for a first item, then resolves", async () => {
    const queue = newQueue()
    const fiber = Effect.runFork(gather(queue, 10, 0, 2))
    await nextTurn()
    expect(fiber.pollUnsafe()).toBeUndefined() // nothing queued: still waiting
    offer(queue, 1)
    expect(await Effect.runPromise(Fiber.join(fiber))).toEqual([1])
  })

  it("gathers what arrives over the following turns, in order", async () => {
    const queue = newQueue()
    offer(queue, 1)
    const gathering = Effect.runPromise(gather(queue, 100, 8, 2))
    setImmediate(() => offer(queue, 2)) // arrives during the first turn
    setImmediate(() => setImmediate(() => offer(queue, 3))) // and the second
    expect(await gathering).toEqual([1, 2, 3])
  })

  it("stops after the quiet turns, leaving later items for the next batch", async () => {
    const queue = newQueue()
    offer(queue, 1)
    const gathering = Effect.runPromise(gather(queue, 100, 8, 2))
    const late = (async () => {
      for (let i = 0; i < 4; i++) await nextTurn()
      offer(queue, 9)
    })()
    expect(await gathering).toEqual([1])
    await late
    expect(rest(queue)).toEqual([9])
  })

  it("stops at the batch limit and at the most turns", async () => {
    const queue = newQueue()
    for (let i = 0; i < 5; i++) offer(queue, i)
    expect(await Effect.runPromise(gather(queue, 3, 8, 2))).toEqual([0, 1, 2])
    expect(rest(queue)).toEqual([3, 4])

    // Something arrives every turn, so no two turns are quiet: the most turns end the batch.
    offer(queue, 0)
    let feeding = true
    let n = 0
    const feed = () => {
      if (!feeding) return
      offer(queue, ++n)
      setImmediate(feed)
    }
    setImmediate(feed)
    const batch = await Effect.runPromise(gather(queue, 1000, 4, 2))
    feeding = false
    expect(batch.length).toBeGreaterThanOrEqual(4) // the first item and one or more per turn
    expect(batch.length).toBeLessThanOrEqual(9)
  })

  it("puts what it took back, in front, when the gathering is interrupted", async () => {
    const queue = newQueue()
    offer(queue, 1)
    offer(queue, 2)
    const fiber = Effect.runFork(gather(queue, 100, 8, 2))
    await Promise.resolve() // the gathering has taken 1 and 2 and waits for a turn
    offer(queue, 3)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(rest(queue)).toEqual([1, 2, 3])
  })
})
