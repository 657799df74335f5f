/**
 * src/store/inbox.ts: the settlement writer's inbox. A batch is everything queued, plus what
 * arrives while the writer keeps gathering over event-loop turns; it stops after quiet turns or
 * at the batch limit; nothing taken is lost when a gathering is interrupted.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Inbox } from "../../src/store/inbox.js"

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("settlement writer inbox", () => {
  it("waits for a first item, then resolves", async () => {
    const inbox = new Inbox<number>()
    const fiber = Effect.runFork(inbox.waitForItems)
    await nextTurn()
    expect(fiber.pollUnsafe()).toBeUndefined() // nothing queued: still waiting
    inbox.offer(1)
    await Effect.runPromise(Fiber.join(fiber))
    expect(inbox.take(10)).toEqual([1])
  })

  it("gathers what arrives over the following turns, in order", async () => {
    const inbox = new Inbox<number>()
    inbox.offer(1)
    const gathering = Effect.runPromise(inbox.gather(100, 8, 2))
    setImmediate(() => inbox.offer(2)) // arrives during the first turn
    setImmediate(() => setImmediate(() => inbox.offer(3))) // and the second
    expect(await gathering).toEqual([1, 2, 3])
  })

  it("stops after the quiet turns, leaving later items for the next batch", async () => {
    const inbox = new Inbox<number>()
    inbox.offer(1)
    const gathering = Effect.runPromise(inbox.gather(100, 8, 2))
    const late = (async () => {
      for (let i = 0; i < 4; i++) await nextTurn()
      inbox.offer(9)
    })()
    expect(await gathering).toEqual([1])
    await late
    expect(inbox.take(10)).toEqual([9])
  })

  it("stops at the batch limit and at the most turns", async () => {
    const inbox = new Inbox<number>()
    for (let i = 0; i < 5; i++) inbox.offer(i)
    expect(await Effect.runPromise(inbox.gather(3, 8, 2))).toEqual([0, 1, 2])
    expect(inbox.take(10)).toEqual([3, 4])

    // Something arrives every turn, so no two turns are quiet: the most turns end the batch.
    inbox.offer(0)
    let feeding = true
    let n = 0
    const feed = () => {
      if (!feeding) return
      inbox.offer(++n)
      setImmediate(feed)
    }
    setImmediate(feed)
    const batch = await Effect.runPromise(inbox.gather(1000, 4, 2))
    feeding = false
    expect(batch.length).toBeGreaterThanOrEqual(4) // the first item and one or more per turn
    expect(batch.length).toBeLessThanOrEqual(9)
  })

  it("puts what it took back, in front, when the gathering is interrupted", async () => {
    const inbox = new Inbox<number>()
    inbox.offer(1)
    inbox.offer(2)
    const fiber = Effect.runFork(inbox.gather(100, 8, 2))
    inbox.offer(3)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(inbox.take(10)).toEqual([1, 2, 3])
  })
})
