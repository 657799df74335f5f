/**
 * src/endpoints/kit/sseRelay.ts: an upstream SSE byte Stream becomes the client's SSE body. Frames come
 * out rewritten, in order, whatever the split of the upstream reads (mid-frame, mid-character); one
 * output element per upstream pull (an array of reads) that completed frames, none for reads that completed none. The
 * relay never fails: it always ends with `finish(early)`, `early` saying why (upstream ended, failed,
 * drain deadline, a bug in the rewrite), except when interrupted (the client left), which propagates
 * and runs no `finish`. Past the drain deadline it ends at the next thing the upstream body does
 * (the HTTP upstream ends its open bodies at the deadline) with `finish(SHUTTING_DOWN)`. Every body
 * here is an in-memory Stream; the drain deadline is the Lifecycle's DrainSignal, fired by hand.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Logger, type LogLevel, Stream } from "effect"
import { UpstreamFailed } from "../../src/domain/errors.js"
import type { SseFrame } from "../../src/domain/sse.js"
import type { EventOut } from "../../src/endpoints/kit/eventOut.js"
import { type EarlyEnd, type FrameRewrite, relaySse, SHUTTING_DOWN } from "../../src/endpoints/kit/sseRelay.js"
import { Lifecycle } from "../../src/services/lifecycle/Lifecycle.js"
import { DrainSignal, layer as lifecycleLayer } from "../../src/services/lifecycle/live.js"

const encoder = new TextEncoder()
const bytes = (text: string) => encoder.encode(text)
const textOf = (element: Uint8Array) => new TextDecoder().decode(element)

/** An upstream body of these reads, one pull each (as the HTTP upstream hands them to a consumer that keeps up). */
const reads = (...texts: ReadonlyArray<string | Uint8Array>): Stream.Stream<Uint8Array, UpstreamFailed> =>
  Stream.fromArrays(...texts.map((t) => [typeof t === "string" ? bytes(t) : t]))

/** `text` as upstream reads, cut at the given byte offsets (so a cut can fall inside a character). */
const cutAt = (text: string, ...offsets: ReadonlyArray<number>): Array<Uint8Array> => {
  const all = bytes(text)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const at of offsets) {
    out.push(all.slice(from, at))
    from = at
  }
  out.push(all.slice(from))
  return out
}

/** A rewrite written as text: what it returns is what the client's SSE body gets. */
interface TextRewrite {
  readonly frames: (frames: ReadonlyArray<SseFrame>) => string
  readonly finish: (early: EarlyEnd | undefined) => string
}

const put = (out: EventOut, text: string) => {
  if (text !== "") out.frame({ event: undefined, data: "", text })
}

const asRewrite = (t: TextRewrite): FrameRewrite => ({
  frames: (frames, out) => put(out, t.frames(frames)),
  finish: (early, out) => put(out, t.finish(early))
})

/**
 * A visible rewrite: each frame as `<event|data>`, the close as `[finish code]`; it records what
 * `finish` was given and how often `frames` ran, so a missing or extra call shows.
 */
const makeRewrite = (frames: TextRewrite["frames"] = (fs) => fs.map((f) => `<${f.event ?? ""}|${f.data}>`).join("")) => {
  const finishes: Array<EarlyEnd | undefined> = []
  const calls = { frames: 0 }
  const rewrite = asRewrite({
    frames: (fs) => {
      calls.frames++
      return frames(fs)
    },
    finish: (early) => {
      finishes.push(early)
      return `[finish ${early?.code ?? "eof"}]`
    }
  })
  return { rewrite, finishes, calls }
}

/** A drain deadline fired by hand, as Lifecycle.pastDrainDeadline gives it to the relay. */
const makeDrain = () => {
  const signal = new DrainSignal()
  return { signal, past: () => signal.isFired }
}

/** Runs the relay to its end: its output elements as text. */
const relayed = (
  body: Stream.Stream<Uint8Array, UpstreamFailed>,
  rewrite: FrameRewrite,
  drain = makeDrain()
) => Effect.map(Stream.runCollect(relaySse(body, rewrite, drain.past)), (out) => out.map(textOf))

const upstreamFailure = new UpstreamFailed({ status: 0, code: "upstream_unreachable", message: "Upstream account 'a' is unreachable" })

/** Frames with non-ASCII data, so a cut inside a character shows. */
const SOURCE = "event: a\ndata: héllo\n\nevent: b\ndata: 日本\n\nevent: c\ndata: 🎉\n\n"

/** Records the log lines written while `effect` runs. */
const withLogs = <A, E>(effect: Effect.Effect<A, E>) => {
  const logs: Array<{ level: LogLevel.LogLevel; message: unknown; cause: Cause.Cause<unknown> }> = []
  const logger = Logger.make(({ cause, logLevel, message }) => {
    logs.push({ level: logLevel, message, cause })
  })
  return Effect.map(Effect.provide(effect, Logger.layer([logger])), (a) => ({ result: a, logs }))
}

/** The defects a logged cause carries. */
const defectsOf = (cause: Cause.Cause<unknown>): Array<unknown> =>
  cause.reasons.filter(Cause.isDieReason).map((reason) => reason.defect)

/** A step inside an upstream body: runs `effect` there and emits nothing. */
const step = (effect: Effect.Effect<unknown>): Stream.Stream<never> => Stream.drain(Stream.fromEffect(effect))

/** Records how the upstream body ended (its Exit) once the relay let go of it. */
const watched = (body: Stream.Stream<Uint8Array, UpstreamFailed>) => {
  const state: { exit: Exit.Exit<unknown, unknown> | undefined } = { exit: undefined }
  const stream = Stream.onExit(body, (exit) =>
    Effect.sync(() => {
      state.exit = exit
    }))
  return { stream, state }
}

describe("relaySse: an upstream that ends", () => {
  it.effect("rewrites every frame in order, whatever the cuts (mid-frame, mid-character), then finish(undefined)", () =>
    Effect.gen(function*() {
      const whole = bytes(SOURCE)
      const inJapanese = whole.indexOf(bytes("日")[0]!) + 1 // inside the 3-byte character
      const inEmoji = whole.indexOf(bytes("🎉")[0]!) + 2 // inside the 4-byte character
      const inField = 3 // inside "event"
      const cuts = cutAt(SOURCE, inField, inJapanese, inEmoji)
      expect(cuts).toHaveLength(4)
      const { rewrite, finishes } = makeRewrite()
      const out = yield* relayed(reads(...cuts), rewrite)
      expect(out.join("")).toBe("<a|héllo><b|日本><c|🎉>[finish eof]")
      expect(finishes).toEqual([undefined])
    }))

  it.effect("one element per upstream read that completed frames; a read that completed none gives no element", () =>
    Effect.gen(function*() {
      const { rewrite } = makeRewrite()
      const out = yield* relayed(reads("data: 1\n\n", "data: 2", new Uint8Array(0), "\n\ndata: 3\n\ndata: 4\n\n", new Uint8Array(0)), rewrite)
      expect(out).toEqual(["<|1>", "<|2><|3><|4>", "[finish eof]"])
    }))

  it.effect("several reads in one pull (what the HTTP upstream hands over after a wait) become one element", () =>
    Effect.gen(function*() {
      const { rewrite, calls } = makeRewrite()
      const body = Stream.fromArrays(
        [bytes("data: 1\n"), bytes("\ndata: 2\n\n"), bytes("data: 3\n\n")],
        [bytes("data: 4\n\n")]
      )
      const out = yield* relayed(body, rewrite)
      expect(out).toEqual(["<|1><|2><|3>", "<|4>", "[finish eof]"])
      // the rewrite still sees each read's frames (4 reads, then the flush at the end)
      expect(calls.frames).toBe(5)
    }))

  it.effect("a last frame without its blank line is flushed before finish", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const out = yield* relayed(reads("data: 1\n\nevent: last\ndata: 2"), rewrite)
      expect(out.join("")).toBe("<|1><last|2>[finish eof]")
      expect(finishes).toEqual([undefined])
    }))

  it.effect("an empty upstream body still ends with finish(undefined), and only that", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const out = yield* relayed(Stream.empty, rewrite)
      expect(out).toEqual(["[finish eof]"])
      expect(finishes).toEqual([undefined])
    }))

  it.effect("a finish with nothing to add gives no element", () =>
    Effect.gen(function*() {
      const finishes: Array<EarlyEnd | undefined> = []
      const rewrite = asRewrite({
        frames: (fs) => fs.map((f) => f.data).join(","),
        finish: (early) => {
          finishes.push(early)
          return ""
        }
      })
      const out = yield* relayed(reads("data: x\n\n"), rewrite)
      expect(out).toEqual(["x"])
      expect(finishes).toEqual([undefined])
    }))

  it.effect("each run decodes afresh: a partial frame of an interrupted run does not leak into the next", () =>
    Effect.gen(function*() {
      const { rewrite } = makeRewrite()
      const decodedStale = yield* Deferred.make<void>()
      let runs = 0
      // the first run reads a partial frame, then is cut off; the second reads a whole one
      const body = Stream.suspend(() =>
        ++runs === 1
          ? Stream.concat(reads("data: stale"), step(Deferred.succeed(decodedStale, undefined))).pipe(Stream.concat(Stream.never))
          : reads("data: fresh\n\n")
      )
      const relay = relaySse(body, rewrite, makeDrain().past)
      const first = yield* Effect.forkChild(Stream.runCollect(relay))
      yield* Deferred.await(decodedStale)
      yield* Fiber.interrupt(first)
      const out = (yield* Stream.runCollect(relay)).map(textOf)
      expect(runs).toBe(2)
      expect(out).toEqual(["<|fresh>", "[finish eof]"])
    }))
})

describe("relaySse: an upstream that fails", () => {
  it.effect("keeps the frames before the failure and ends with finish(server_error, the failure's message); it does not fail", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const body = Stream.concat(reads("data: 1\n\n", "data: 2\n\ndata: cut"), Stream.fail(upstreamFailure))
      const exit = yield* Effect.exit(relayed(body, rewrite))
      expect(Exit.isSuccess(exit)).toBe(true)
      // the partial frame before the failure is not flushed as if the upstream had ended
      expect(Exit.isSuccess(exit) && exit.value.join("")).toBe("<|1><|2>[finish server_error]")
      expect(finishes).toEqual([{ code: "server_error", message: "Upstream account 'a' is unreachable" }])
    }))

  it.effect("a failure before any byte ends with only finish(server_error)", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const out = yield* relayed(Stream.fail(upstreamFailure), rewrite)
      expect(out).toEqual(["[finish server_error]"])
      expect(finishes).toEqual([{ code: "server_error", message: upstreamFailure.message }])
    }))

  it.effect("an upstream failure is not logged as a rewrite bug", () =>
    Effect.gen(function*() {
      const { rewrite } = makeRewrite()
      const { logs } = yield* withLogs(relayed(Stream.concat(reads("data: 1\n\n"), Stream.fail(upstreamFailure)), rewrite))
      expect(logs).toEqual([])
    }))
})

describe("relaySse: a rewrite that throws", () => {
  const FORWARD_FAILED = { code: "server_error", message: "The gateway failed to forward the stream" }

  it.effect("ends with finish(server_error, forward failed), keeps what came before, reads no further, logs the defect", () =>
    Effect.gen(function*() {
      const bug = new Error("rewrite bug")
      const { rewrite, finishes, calls } = makeRewrite((fs) => {
        if (fs.some((f) => f.data === "boom")) throw bug
        return fs.map((f) => `<|${f.data}>`).join("")
      })
      let readAfterBug = false
      const body = watched(Stream.concat(
        reads("data: ok\n\n", "data: boom\n\n"),
        Stream.suspend(() => {
          readAfterBug = true
          return Stream.concat(reads("data: later\n\n"), Stream.never)
        })
      ))
      const { logs, result: exit } = yield* withLogs(Effect.exit(relayed(body.stream, rewrite)))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(Exit.isSuccess(exit) && exit.value).toEqual(["<|ok>", "[finish server_error]"])
      expect(finishes).toEqual([FORWARD_FAILED])
      expect(calls.frames).toBe(2)
      expect(readAfterBug).toBe(false)
      // the upstream body was let go (the request's scope aborts the upstream request)
      expect(body.state.exit).toBeDefined()
      expect(logs).toHaveLength(1)
      const log = logs[0]!
      expect(log.level).toBe("Error")
      expect(Array.isArray(log.message) ? log.message : [log.message]).toEqual(["stream rewrite failed"])
      expect(defectsOf(log.cause)).toEqual([bug])
    }))

  it.effect("a throw while flushing the last frame is the same forward failure, not a clean end", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite((fs) => {
        if (fs.some((f) => f.data === "tail")) throw new Error("flush bug")
        return fs.map((f) => `<|${f.data}>`).join("")
      })
      const { logs, result: out } = yield* withLogs(relayed(reads("data: 1\n\ndata: tail"), rewrite))
      expect(out).toEqual(["<|1>", "[finish server_error]"])
      expect(finishes).toEqual([FORWARD_FAILED])
      expect(logs.map((l) => l.level)).toEqual(["Error"])
    }))

  it.effect("a defect in the upstream body is closed the same way and logged", () =>
    Effect.gen(function*() {
      const bug = new Error("upstream body bug")
      const { rewrite, finishes } = makeRewrite()
      const { logs, result: out } = yield* withLogs(relayed(Stream.concat(reads("data: 1\n\n"), Stream.die(bug)), rewrite))
      expect(out).toEqual(["<|1>", "[finish server_error]"])
      expect(finishes).toEqual([FORWARD_FAILED])
      expect(logs).toHaveLength(1)
      expect(defectsOf(logs[0]!.cause)).toEqual([bug])
    }))
})

describe("relaySse: the drain deadline", () => {
  it.effect("past the deadline, the next read ends the stream with finish(SHUTTING_DOWN), unrelayed; the upstream is let go", () =>
    Effect.gen(function*() {
      const { rewrite, finishes, calls } = makeRewrite()
      const drain = makeDrain()
      const body = watched(Stream.concat(reads("data: 1\n\n"), step(Effect.sync(() => drain.signal.fire()))).pipe(
        Stream.concat(reads("data: 2\n\n", "data: 3\n\n")),
        Stream.concat(Stream.never)
      ))
      const out = yield* relayed(body.stream, rewrite, drain)
      expect(out).toEqual(["<|1>", "[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
      expect(calls.frames).toBe(1)
      expect(body.state.exit).toBeDefined()
    }))

  it.effect("an upstream that ends past the deadline is closed as shutting down too, its unfinished last frame dropped", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const drain = makeDrain()
      const body = Stream.concat(reads("data: 1\n\ndata: tail"), step(Effect.sync(() => drain.signal.fire())))
      const out = yield* relayed(body, rewrite, drain)
      expect(out).toEqual(["<|1>", "[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
    }))

  // The HTTP upstream fails its open bodies at the deadline: a silent upstream ends that way.
  it.effect("a silent upstream whose body fails at the deadline ends with finish(SHUTTING_DOWN), not as an upstream failure", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const drain = makeDrain()
      const seen = yield* Deferred.make<void>()
      const body = Stream.concat(
        reads("data: 1\n\n", "data: 2\n\ndata: par"),
        Stream.fromEffect(Effect.andThen(drain.signal.await, Effect.fail(upstreamFailure)))
      )
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(relaySse(body, rewrite, drain.past).pipe(
          Stream.tap((element) => textOf(element) === "<|2>" ? Deferred.succeed(seen, undefined) : Effect.void)
        ))
      )
      yield* Deferred.await(seen)
      // silent upstream, no deadline yet: the relay waits
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      expect(fiber.pollUnsafe()).toBeUndefined()
      expect(finishes).toEqual([])

      drain.signal.fire()
      const out = (yield* Fiber.join(fiber)).map(textOf)
      // the partial frame is not flushed: the upstream did not end
      expect(out).toEqual(["<|1>", "<|2>", "[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
    }))

  it.effect("an upstream that keeps sending stops at the first read past the deadline", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const drain = makeDrain()
      let sent = 0
      let relayedCount = 0
      const body = Stream.fromEffectRepeat(Effect.sync(() => bytes(`data: ${++sent}\n\n`)))
      const out = yield* Stream.runCollect(relaySse(body, rewrite, drain.past).pipe(
        Stream.tap(() =>
          Effect.sync(() => {
            if (++relayedCount === 10) drain.signal.fire()
          })
        )
      ))
      const texts = out.map(textOf)
      expect(texts).toEqual([...Array.from({ length: 10 }, (_, i) => `<|${i + 1}>`), "[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
    }))

  it.effect("a deadline already past relays nothing: the first read ends the stream with finish(SHUTTING_DOWN)", () =>
    Effect.gen(function*() {
      const { rewrite, finishes, calls } = makeRewrite()
      const drain = makeDrain()
      drain.signal.fire()
      const out = yield* relayed(Stream.concat(reads("data: 1\n\n"), Stream.never), rewrite, drain)
      expect(out).toEqual(["[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
      expect(calls.frames).toBe(0)
    }))

  it.live("ends with SHUTTING_DOWN once Lifecycle.beginShutdown(0) passed the deadline", () =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      const { rewrite, finishes } = makeRewrite()
      const seen = yield* Deferred.make<void>()
      // the upstream sends again only after the deadline
      const body = Stream.concat(reads("data: 1\n\n"), step(lifecycle.drainDeadline)).pipe(Stream.concat(reads("data: 2\n\n")))
      const fiber = yield* Effect.forkChild(Stream.runCollect(
        relaySse(body, rewrite, lifecycle.pastDrainDeadline).pipe(Stream.tap(() => Deferred.succeed(seen, undefined)))
      ))
      yield* Deferred.await(seen)
      yield* lifecycle.beginShutdown(0)
      const out = (yield* Fiber.join(fiber)).map(textOf)
      expect(out).toEqual(["<|1>", "[finish server_shutting_down]"])
      expect(finishes).toEqual([SHUTTING_DOWN])
    }).pipe(Effect.provide(lifecycleLayer), Effect.timeout("5 seconds")))

  it.effect("a deadline that passes after the stream ended changes nothing", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const drain = makeDrain()
      const out = yield* relayed(reads("data: 1\n\n"), rewrite, drain)
      drain.signal.fire()
      expect(out).toEqual(["<|1>", "[finish eof]"])
      expect(finishes).toEqual([undefined])
    }))
})

describe("relaySse: interruption", () => {
  it.effect("interrupting the consumer (the client left) interrupts the upstream body and runs no finish", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const seen = yield* Deferred.make<void>()
      const upstreamClosed = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      const body = Stream.concat(reads("data: 1\n\n"), Stream.never).pipe(
        Stream.onExit((exit) => Deferred.succeed(upstreamClosed, exit))
      )
      const out: Array<string> = []
      const fiber = yield* Effect.forkChild(
        Stream.runForEach(relaySse(body, rewrite, makeDrain().past), (element) =>
          Effect.andThen(Effect.sync(() => out.push(textOf(element))), Deferred.succeed(seen, undefined)))
      )
      yield* Deferred.await(seen)
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      // the upstream body was interrupted, not ended
      expect(Exit.hasInterrupts(yield* Deferred.await(upstreamClosed))).toBe(true)
      expect(out).toEqual(["<|1>"])
      expect(finishes).toEqual([])
    }))

  it.effect("an interruption from inside the upstream body propagates too, with no finish", () =>
    Effect.gen(function*() {
      const { rewrite, finishes } = makeRewrite()
      const body = Stream.concat(reads("data: 1\n\n"), Stream.fromEffect(Effect.interrupt))
      const exit = yield* Effect.exit(relayed(body, rewrite))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(finishes).toEqual([])
    }))
})
