/**
 * The gateway gives memory back once it is quiet (src/server/idleMemory.ts): one release after the
 * quiet period following traffic, none while a request or a WebSocket connection is open, and none
 * again until traffic comes back. On the TestClock, with node's server stood in by an emitter.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { EventEmitter } from "node:events"
import { releaseMemoryWhenIdle } from "../../src/server/idleMemory.js"

const watched = Effect.gen(function*() {
  const server = new EventEmitter()
  let releases = 0
  yield* releaseMemoryWhenIdle(server, { quietMillis: 10_000, checkMillis: 1_000, release: () => void releases++ })
  /** A request that stays open until the returned function ends it. */
  const open = (event: "request" | "upgrade" = "request") => {
    const end = new EventEmitter()
    server.emit(event, {}, end)
    return () => void end.emit("close")
  }
  return { open, releases: () => releases }
})

describe("memory given back when the gateway is quiet", () => {
  it.effect("releases once after start-up's quiet period, and again only after more traffic", () =>
    Effect.gen(function*() {
      const g = yield* watched
      yield* TestClock.adjust("9 seconds")
      expect(g.releases()).toBe(0)
      yield* TestClock.adjust("2 seconds")
      expect(g.releases()).toBe(1)
      yield* TestClock.adjust("60 seconds")
      expect(g.releases()).toBe(1)
      g.open()()
      yield* TestClock.adjust("11 seconds")
      expect(g.releases()).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("waits while a request or a WebSocket connection is open, and counts the quiet from its end", () =>
    Effect.gen(function*() {
      const g = yield* watched
      const endRequest = g.open()
      const closeSocket = g.open("upgrade")
      yield* TestClock.adjust("60 seconds")
      expect(g.releases()).toBe(0)
      endRequest()
      yield* TestClock.adjust("60 seconds")
      expect(g.releases()).toBe(0)
      closeSocket()
      yield* TestClock.adjust("9 seconds")
      expect(g.releases()).toBe(0)
      yield* TestClock.adjust("2 seconds")
      expect(g.releases()).toBe(1)
    }).pipe(Effect.scoped))
})

describe("collectAllGarbage", () => {
  it("runs V8's collector without leaving gc exposed to the application", async () => {
    const { collectAllGarbage } = await import("../../src/server/idleMemory.js")
    const hadGc = typeof (globalThis as { gc?: unknown }).gc === "function"
    collectAllGarbage()
    collectAllGarbage()
    expect(typeof (globalThis as { gc?: unknown }).gc === "function").toBe(hadGc)
  })
})
