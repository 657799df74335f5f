/**
 * src/responses/ssePump.ts: the upstream SSE body reaches the client transformed, in order, with
 * backpressure; the pump ends with a value saying why (Ended, Failed, Draining) and leaves no
 * listeners on the upstream body. Runs on the real clock: Node streams deliver on the event loop.
 */
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Stream } from "effect"
import { UpstreamFailed } from "../../src/domain/errors.js"
import type { SseSink } from "../../src/http/reply.js"
import { pumpFrames, type PumpEnd, pumpUpstream } from "../../src/responses/ssePump.js"
import { DrainSignal, Lifecycle, lifecycleOf, type LifecycleShape } from "../../src/services/Lifecycle.js"
import type { BodySource, UpstreamResponse } from "../../src/upstream/Upstream.js"

const bytes = (text: string) => new TextEncoder().encode(text)

/** The transform under test: visible, so a chunk that skipped it would show. */
const upper = (chunk: Uint8Array) => `[${new TextDecoder().decode(chunk).toUpperCase()}]`

/** Lets the event loop deliver what streams have queued (nextTick and setImmediate work). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await turn()
}

/** Waits until `check` holds, a turn at a time. */
const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (check()) return
    await turn()
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** A client sink that records frames; while `blocked` its writes answer false until `drain()`. */
const makeSink = () => {
  const written: Array<string> = []
  const drainCallbacks: Array<() => void> = []
  const state = { blocked: false, ended: false }
  const sink: SseSink = {
    write: (text) => {
      written.push(text)
      return !state.blocked
    },
    onDrain: (callback) => {
      drainCallbacks.push(callback)
    },
    end: () => {
      state.ended = true
    }
  }
  const drain = () => {
    state.blocked = false
    for (const callback of drainCallbacks.splice(0)) callback()
  }
  return { sink, written, state, drain, drainCallbacks }
}

/** A Lifecycle whose deadline the test fires by hand, counting who watches it. */
const makeLifecycle = () => {
  const signal = new DrainSignal()
  return { shape: lifecycleOf(signal), fire: () => signal.fire(), watchers: () => signal.watchers }
}

const failure = (e: unknown) =>
  new UpstreamFailed({ status: 0, code: "upstream_error", message: `upstream broke: ${e instanceof Error ? e.message : String(e)}` })

/**
 * A push source over a Node stream, as the HTTP upstream gives one: its listeners are on the
 * stream only while the pump listens, so a leak shows as a listener count.
 */
const sourceOf = (stream: PassThrough): BodySource => {
  let detach = () => {}
  return {
    listen: (listener) => {
      const onData = (chunk: Uint8Array) => listener.data(chunk)
      const onEnd = () => listener.end()
      const onError = (e: unknown) => listener.error(failure(e))
      const onClose = () => listener.error(failure(new Error("closed mid-answer")))
      stream.on("data", onData)
      stream.once("end", onEnd)
      stream.once("error", onError)
      stream.once("close", onClose)
      detach = () => {
        stream.off("data", onData)
        stream.off("end", onEnd)
        stream.off("error", onError)
        stream.off("close", onClose)
      }
    },
    unlisten: () => detach(),
    pause: () => stream.pause(),
    resume: () => stream.resume()
  }
}

/** An HTTP-like answer with a push source (the fast path). */
const readableResponse = (source: PassThrough): UpstreamResponse => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  body: Stream.die(new Error("the fast path must not read the Stream body")),
  source: sourceOf(source)
})

/** A simulator-like answer: only the Stream body. */
const streamResponse = (body: Stream.Stream<Uint8Array, UpstreamFailed>): UpstreamResponse => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  body
})

/** Starts the pump; resolves once it listens to the source. */
const startOnReadable = async (
  source: PassThrough,
  sink: SseSink,
  lifecycle: LifecycleShape,
  onChunk: (chunk: Uint8Array) => string = upper
) => {
  const fiber = Effect.runFork(pumpUpstream(readableResponse(source), sink, onChunk, lifecycle))
  await until(() => source.listenerCount("data") > 0, "the pump to listen")
  return fiber
}

const join = (fiber: Fiber.RuntimeFiber<PumpEnd>) => Effect.runPromise(Fiber.join(fiber))

const isPaused = (source: PassThrough) => source.isPaused() || source.readableFlowing === false

describe("pumpUpstream, Node fast path", () => {
  it("forwards every chunk through onChunk, in order, and ends with Ended", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const lifecycle = makeLifecycle()
    const fiber = await startOnReadable(source, sink, lifecycle.shape)
    expect(lifecycle.watchers()).toBe(1)

    source.write(bytes("event: a\n\n"))
    await turns()
    source.write(bytes("event: b\n\n"))
    await turns()
    source.write(bytes("event: c\n\n"))
    source.end()

    expect(await join(fiber)).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["[EVENT: A\n\n]", "[EVENT: B\n\n]", "[EVENT: C\n\n]"])
    expect(source.listenerCount("data")).toBe(0)
    expect(lifecycle.watchers()).toBe(0)
  })

  it("writes nothing for a chunk onChunk turns into no frames", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape, (c) => {
      const text = new TextDecoder().decode(c)
      return text === "partial" ? "" : text
    })
    source.write(bytes("partial"))
    await turns()
    source.write(bytes("whole"))
    source.end()
    expect(await join(fiber)).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["whole"])
  })

  it("pauses the upstream while the client is full and resumes it on drain, losing nothing", async () => {
    const source = new PassThrough()
    const { sink, written, state, drain, drainCallbacks } = makeSink()
    state.blocked = true
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape)

    source.write(bytes("one"))
    await turns()
    expect(written).toEqual(["[ONE]"])
    expect(isPaused(source)).toBe(true)
    expect(drainCallbacks.length).toBeGreaterThan(0)

    // More upstream data waits in the source, not in the client.
    source.write(bytes("two"))
    source.write(bytes("three"))
    await turns()
    expect(written).toEqual(["[ONE]"])
    expect(isPaused(source)).toBe(true)

    drain()
    await turns()
    expect(isPaused(source)).toBe(false)
    expect(written).toEqual(["[ONE]", "[TWO]", "[THREE]"])

    source.write(bytes("four"))
    source.end()
    expect(await join(fiber)).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["[ONE]", "[TWO]", "[THREE]", "[FOUR]"])
  })

  it("keeps order when the client fills up again after each drain", async () => {
    const source = new PassThrough()
    const { sink, written, state, drainCallbacks } = makeSink()
    state.blocked = true
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape)
    const chunks = ["a", "b", "c", "d", "e"]
    for (const c of chunks) source.write(bytes(c))
    source.end()

    // Every write fills the client again: one chunk per drain.
    for (let i = 1; i <= chunks.length; i++) {
      await until(() => written.length === i, `chunk ${i}`)
      await turns()
      expect(written.length).toBe(i)
      expect(isPaused(source)).toBe(true)
      for (const callback of drainCallbacks.splice(0)) callback()
    }
    expect(await join(fiber)).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["[A]", "[B]", "[C]", "[D]", "[E]"])
  })

  it("ends with Failed and the mapped message when the upstream body errors", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape)
    source.write(bytes("first"))
    await turns()
    source.destroy(new Error("socket hang up"))

    const end = await join(fiber)
    expect(end).toEqual({ _tag: "Failed", message: "upstream broke: socket hang up" })
    expect(written).toEqual(["[FIRST]"])
    expect(source.listenerCount("data")).toBe(0)
    expect(source.listenerCount("error")).toBe(0)
  })

  it("ends with Failed when the upstream body closes without ending", async () => {
    const source = new PassThrough()
    const { sink } = makeSink()
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape)
    source.write(bytes("first"))
    await turns()
    source.destroy()

    const end = await join(fiber)
    expect(end._tag).toBe("Failed")
    expect(end._tag === "Failed" && end.message.length > 0).toBe(true)
    expect(end._tag === "Failed" && end.defect).toBeUndefined()
  })

  it("ends with Failed carrying the defect when onChunk throws, without throwing out of the listener", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const bug = new Error("rewrite bug")
    let calls = 0
    const fiber = await startOnReadable(source, sink, makeLifecycle().shape, (c) => {
      calls++
      if (calls === 2) throw bug
      return upper(c)
    })
    source.write(bytes("ok"))
    await turns()
    // If the throw escaped the 'data' listener, it would surface here (or as an uncaught exception).
    expect(() => source.write(bytes("boom"))).not.toThrow()
    await turns()

    const end = await join(fiber)
    expect(end._tag).toBe("Failed")
    expect(end._tag === "Failed" && end.defect).toBe(bug)
    expect(written).toEqual(["[OK]"])
    expect(source.listenerCount("data")).toBe(0)

    // Later upstream data goes nowhere.
    source.write(bytes("later"))
    await turns()
    expect(written).toEqual(["[OK]"])
  })

  it("ends a waiting pump with Draining at the drain deadline and stops listening", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const lifecycle = makeLifecycle()
    const fiber = await startOnReadable(source, sink, lifecycle.shape)
    source.write(bytes("before"))
    await turns()

    lifecycle.fire()
    expect(await join(fiber)).toEqual({ _tag: "Draining" })
    expect(source.listenerCount("data")).toBe(0)
    expect(source.listenerCount("end")).toBe(0)
    expect(source.listenerCount("close")).toBe(0)

    source.write(bytes("after"))
    await turns()
    expect(written).toEqual(["[BEFORE]"])
  })

  it("ends with Draining when Lifecycle.beginShutdown(0) passes the deadline", async () => {
    const source = new PassThrough()
    const { sink } = makeSink()
    const end = await Effect.runPromise(
      Effect.gen(function*() {
        const lifecycle = yield* Lifecycle
        const fiber = yield* Effect.fork(pumpUpstream(readableResponse(source), sink, upper, lifecycle))
        yield* Effect.promise(() => until(() => source.listenerCount("data") > 0, "the pump to listen"))
        yield* lifecycle.beginShutdown(0)
        return yield* Fiber.join(fiber)
      }).pipe(Effect.provide(Lifecycle.layer))
    )
    expect(end).toEqual({ _tag: "Draining" })
    expect(source.listenerCount("data")).toBe(0)
  })

  // Past the deadline already: onDrainDeadline calls back inside its own call.
  it("ends with Draining when it starts after the drain deadline has passed", async () => {
    const source = new PassThrough()
    const { sink } = makeSink()
    const lifecycle = makeLifecycle()
    lifecycle.fire()
    const exit = await Effect.runPromiseExit(pumpUpstream(readableResponse(source), sink, upper, lifecycle.shape))
    expect(exit).toEqual(Exit.succeed({ _tag: "Draining" }))
    expect(source.listenerCount("data")).toBe(0)
  })

  it("removes its listeners from the upstream body when interrupted", async () => {
    const source = new PassThrough()
    const { sink, written } = makeSink()
    const lifecycle = makeLifecycle()
    const fiber = await startOnReadable(source, sink, lifecycle.shape)
    source.write(bytes("x"))
    await turns()

    const exit = await Effect.runPromise(Fiber.interrupt(fiber))
    expect(Exit.isInterrupted(exit)).toBe(true)
    expect(source.listenerCount("data")).toBe(0)
    expect(source.listenerCount("end")).toBe(0)
    expect(source.listenerCount("error")).toBe(0)
    expect(source.listenerCount("close")).toBe(0)
    expect(lifecycle.watchers()).toBe(0)

    source.write(bytes("y"))
    await turns()
    expect(written).toEqual(["[X]"])
  })

  it("does not resume the upstream on a drain that comes after it ended", async () => {
    const source = new PassThrough()
    const { sink, state, drain } = makeSink()
    state.blocked = true
    const lifecycle = makeLifecycle()
    const fiber = await startOnReadable(source, sink, lifecycle.shape)
    source.write(bytes("x"))
    await turns()
    expect(isPaused(source)).toBe(true)
    lifecycle.fire()
    expect(await join(fiber)).toEqual({ _tag: "Draining" })
    drain()
    await turns()
    expect(isPaused(source)).toBe(true)
  })
})

describe("pumpUpstream, Stream fallback", () => {
  it("forwards every chunk through onChunk, in order, and ends with Ended", async () => {
    const { sink, written } = makeSink()
    const end = await Effect.runPromise(
      pumpUpstream(streamResponse(Stream.make(bytes("a"), bytes("b"), bytes("c"))), sink, upper, makeLifecycle().shape)
    )
    expect(end).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["[A]", "[B]", "[C]"])
  })

  it("waits for the client to drain before the next chunk", async () => {
    const { sink, written, state, drain } = makeSink()
    state.blocked = true
    const fiber = Effect.runFork(
      pumpUpstream(streamResponse(Stream.make(bytes("a"), bytes("b"), bytes("c"))), sink, upper, makeLifecycle().shape)
    )
    await turns()
    expect(written).toEqual(["[A]"])
    drain()
    expect(await join(fiber)).toEqual({ _tag: "Ended" })
    expect(written).toEqual(["[A]", "[B]", "[C]"])
  })

  it("ends with Failed and the error's message when the Stream fails", async () => {
    const { sink, written } = makeSink()
    const body = Stream.concat(
      Stream.make(bytes("a")),
      Stream.fail(new UpstreamFailed({ status: 0, code: "upstream_error", message: "connection reset by upstream" }))
    )
    const end = await Effect.runPromise(pumpUpstream(streamResponse(body), sink, upper, makeLifecycle().shape))
    expect(end).toEqual({ _tag: "Failed", message: "connection reset by upstream" })
    expect(written).toEqual(["[A]"])
  })

  it("ends a waiting pump with Draining at the drain deadline", async () => {
    const { sink, written } = makeSink()
    const lifecycle = makeLifecycle()
    const body = Stream.concat(Stream.make(bytes("a")), Stream.never)
    const fiber = Effect.runFork(pumpUpstream(streamResponse(body), sink, upper, lifecycle.shape))
    await turns()
    expect(written).toEqual(["[A]"])
    lifecycle.fire()
    expect(await join(fiber)).toEqual({ _tag: "Draining" })
  })

  // A throwing onChunk must end the stream at once, not leave it waiting for the drain deadline.
  it("ends with Failed carrying the defect when onChunk throws", async () => {
    const { sink } = makeSink()
    const bug = new Error("rewrite bug")
    const exit = await Effect.runPromiseExit(
      pumpUpstream(streamResponse(Stream.make(bytes("a"))), sink, () => {
        throw bug
      }, makeLifecycle().shape).pipe(Effect.timeout("2 seconds"))
    )
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(Exit.isSuccess(exit) && exit.value._tag === "Failed" && exit.value.defect).toBe(bug)
  })
})

describe("pumpFrames", () => {
  /**
   * Starts pumpFrames on `source` with visible frames, recording whether the client's stream was
   * already ended and how much it had been sent when the settlement ran.
   */
  const startFrames = async (source: PassThrough) => {
    const { sink, state, written } = makeSink()
    const atSettle: Array<{ ended: boolean; written: number }> = []
    const fiber = Effect.runFork(pumpFrames(readableResponse(source), sink, makeLifecycle().shape, {
      frames: (frames) => frames.map((f) => `<${f.data}>`).join(""),
      finish: (early) => (early === undefined ? "<done>" : "<failed>"),
      settle: Effect.sync(() => atSettle.push({ ended: state.ended, written: written.length }))
    }))
    await until(() => source.listenerCount("data") > 0, "the pump to listen")
    return { written, atSettle, done: () => Effect.runPromise(Fiber.join(fiber)) }
  }

  // The client has its whole stream, terminal event included, before the settlement's batch
  // commits: settling must not hold the response open.
  it("ends the client's stream after the closing frames and before the settlement runs", async () => {
    const source = new PassThrough()
    const { atSettle, done, written } = await startFrames(source)
    source.end("data: a\n\ndata: b\n\n")
    await done()
    expect(written.join("")).toBe("<a><b><done>")
    expect(atSettle).toEqual([{ ended: true, written: written.length }])
  })

  it("still settles, with the stream ended, when the upstream breaks off", async () => {
    const source = new PassThrough()
    const { atSettle, done, written } = await startFrames(source)
    source.write("data: a\n\n")
    await turns()
    source.destroy(new Error("connection reset"))
    await done()
    expect(written.join("")).toBe("<a><failed>")
    expect(atSettle).toEqual([{ ended: true, written: written.length }])
  })
})
