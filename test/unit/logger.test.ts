/**
 * src/observability/logger.ts: one JSON object per line (message, logLevel, timestamp,
 * annotations, cause when there is one), and lines of one event-loop turn written together;
 * src/observability/accessLog.ts: the access line written directly is the logger's line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, type Fiber, type Layer, Logger, type LogLevel, References } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { batchedWriter, formatLine } from "../../src/observability/logger.js"

/** Runs `effect` with a logger that formats each entry with `formatLine`; returns the lines. */
const linesOf = (effect: Effect.Effect<void>): Array<string> => {
  const lines: Array<string> = []
  const logger = Logger.make((options) => {
    lines.push(formatLine(options))
  })
  Effect.runSync(effect.pipe(Effect.provide(Logger.layer([logger]))))
  return lines
}

const only = (lines: Array<string>): string => {
  expect(lines).toHaveLength(1)
  const line = lines[0]
  if (line === undefined) throw new Error("no line")
  return line
}

const parse = (line: string): Record<string, unknown> => JSON.parse(line) as Record<string, unknown>

/** Options as a Logger receives them, built by hand (the fiber only answers its log annotations). */
const options = (
  message: unknown,
  annotations: Record<string, unknown> = {},
  cause: Cause.Cause<unknown> = Cause.empty
): Logger.Options<unknown> => ({
  logLevel: "Info",
  message,
  cause,
  fiber: {
    getRef: (ref: { readonly defaultValue: () => unknown }) =>
      ref === References.CurrentLogAnnotations ? annotations : ref.defaultValue()
  } as unknown as Fiber.Fiber<unknown, unknown>,
  date: new Date("2026-01-02T03:04:05.678Z")
})

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe("formatLine", () => {
  it("gives one line of JSON with message, level, timestamp and annotations of their own types", () => {
    const before = Date.now()
    const line = only(linesOf(
      Effect.logInfo("request").pipe(Effect.annotateLogs({ status: 200, path: "/v1/responses", ok: true, ms: 12.5 }))
    ))
    expect(line.endsWith("\n")).toBe(true)
    expect(line.indexOf("\n")).toBe(line.length - 1)
    const entry = parse(line)
    expect(entry.message).toBe("request")
    expect(entry.logLevel).toBe("INFO")
    expect(typeof entry.timestamp).toBe("string")
    expect(entry.timestamp).toMatch(ISO)
    const at = Date.parse(entry.timestamp as string)
    expect(at).toBeGreaterThanOrEqual(before - 1)
    expect(at).toBeLessThanOrEqual(Date.now() + 1)
    expect(entry.annotations).toEqual({ status: 200, path: "/v1/responses", ok: true, ms: 12.5 })
    expect("cause" in entry).toBe(false)
  })

  it("labels each level", () => {
    const lines = linesOf(
      Effect.logWarning("w").pipe(Effect.andThen(Effect.logError("e")), Effect.andThen(Effect.logDebug("d")))
    )
    // The default minimum level drops debug.
    expect(lines.map((l) => parse(l).logLevel)).toEqual(["WARN", "ERROR"])
  })

  it("keeps the annotations object off a line that has none", () => {
    const entry = parse(only(linesOf(Effect.logInfo("plain"))))
    expect(entry.message).toBe("plain")
    expect(entry.annotations ?? {}).toEqual({})
    expect("cause" in entry).toBe(false)
  })

  it("includes the cause, as text, only when there is one", () => {
    const lines = linesOf(
      Effect.logError("settlement failed", Cause.fail(new Error("disk full"))).pipe(
        Effect.annotateLogs("request_id", "req_1")
      )
    )
    const entry = parse(only(lines))
    expect(entry.message).toBe("settlement failed")
    expect(entry.logLevel).toBe("ERROR")
    expect(typeof entry.cause).toBe("string")
    expect(entry.cause).toContain("disk full")
    expect(entry.annotations).toEqual({ request_id: "req_1" })
  })

  it("renders a defect's cause too", () => {
    const entry = parse(formatLine(options("stream rewrite failed", {}, Cause.die(new Error("rewrite bug")))))
    expect(entry.cause).toContain("rewrite bug")
  })

  it("escapes quotes, backslashes and newlines in the message and annotations", () => {
    const line = formatLine(options("say \"hi\"\nthen \\ leave", { "odd \"key\"": "a\nb" }))
    expect(line.indexOf("\n")).toBe(line.length - 1)
    const entry = parse(line)
    expect(entry.message).toBe("say \"hi\"\nthen \\ leave")
    expect(entry.annotations).toEqual({ "odd \"key\"": "a\nb" })
  })

  it("renders an array message (several log arguments) as text", () => {
    const entry = parse(only(linesOf(Effect.logInfo("upstream said", { status: 503 }, 7))))
    expect(typeof entry.message).toBe("string")
    expect(entry.message).toContain("upstream said")
    expect(entry.message).toContain("503")
    expect(entry.message).toContain("7")
  })

  it("renders an object message as text", () => {
    const entry = parse(formatLine(options({ event: "started", port: 8080 })))
    expect(typeof entry.message).toBe("string")
    expect(JSON.parse(entry.message as string)).toEqual({ event: "started", port: 8080 })
  })

  it("does not throw on a circular annotation or message", () => {
    const circular: Record<string, unknown> = { name: "loop" }
    circular.self = circular
    expect(() => formatLine(options("with loop", { ctx: circular, n: 1 }))).not.toThrow()
    // A circular message is still rendered as text on a valid line.
    const entry = parse(formatLine(options(circular, { n: 1 })))
    expect(typeof entry.message).toBe("string")
    expect(entry.annotations).toEqual({ n: 1 })
    // Through a real logger as well: the line is written, not lost to a throw.
    const lines = linesOf(Effect.logInfo("with loop").pipe(Effect.annotateLogs({ ctx: circular })))
    expect(only(lines)).toContain("\"message\":\"with loop\"")
  })

  // What JSON cannot hold (circular, undefined) is written as a string, so the line stays JSON.
  it("gives valid JSON for a circular annotation value", () => {
    const circular: Record<string, unknown> = { name: "loop" }
    circular.self = circular
    const entry = parse(formatLine(options("with loop", { ctx: circular, n: 1 })))
    expect((entry.annotations as Record<string, unknown>).n).toBe(1)
  })

  it("gives valid JSON for an undefined annotation value", () => {
    const line = formatLine(options("request", { code: undefined, status: 200 }))
    expect(() => parse(line)).not.toThrow()
  })
})

describe("batchedWriter", () => {
  const fakeOut = () => {
    const calls: Array<string> = []
    const out = {
      write: (text: string) => {
        calls.push(text)
        return true
      }
    } as unknown as NodeJS.WritableStream
    return { out, calls }
  }
  const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

  it("writes the lines of one turn in one call, in order, and nothing synchronously", async () => {
    const { out, calls } = fakeOut()
    const write = batchedWriter(out)
    write("one\n")
    write("two\n")
    write("three\n")
    expect(calls).toEqual([])
    await Promise.resolve()
    expect(calls).toEqual([])

    await nextTurn()
    expect(calls).toEqual(["one\ntwo\nthree\n"])
  })

  it("writes each later turn's lines in a call of their own, and nothing for an idle turn", async () => {
    const { out, calls } = fakeOut()
    const write = batchedWriter(out)
    write("a\n")
    await nextTurn()
    write("b\n")
    write("c\n")
    await nextTurn()
    await nextTurn()
    expect(calls).toEqual(["a\n", "b\nc\n"])
  })

  it("writes formatted log lines from a logger built on it", async () => {
    const { out, calls } = fakeOut()
    const write = batchedWriter(out)
    const logger = Logger.make((o) => write(formatLine(o)))
    Effect.runSync(
      Effect.logInfo("first").pipe(
        Effect.andThen(Effect.logInfo("second")),
        Effect.provide(Logger.layer([logger]))
      )
    )
    expect(calls).toEqual([])
    await nextTurn()
    expect(calls).toHaveLength(1)
    const lines = (calls[0] ?? "").split("\n")
    expect(lines.pop()).toBe("")
    expect(lines.map((l) => parse(l).message)).toEqual(["first", "second"])
  })
})

describe("the access log", () => {
  const entry: AccessEntry = {
    requestId: "5f0e8e8c-0000-4000-8000-000000000001",
    method: "POST",
    // Client text: quotes, a backslash and a control character must come out as valid JSON.
    path: "/v1/resp\"on\\ses\u0001",
    status: 499,
    code: "client_closed_request",
    durationMs: 12
  }

  /** What `layer` or `layerLogger` record for `entry`, with the minimum log level at `minimum`. */
  const recorded = (make: (lines: Array<string>) => Layer.Layer<AccessLog>, minimum: LogLevel.LogLevel) => {
    const lines: Array<string> = []
    const capture = Logger.layer([Logger.make((o) => lines.push(formatLine(o)))])
    Effect.runSync(
      Effect.flatMap(AccessLog, (log) => log.record(entry)).pipe(
        Effect.provide(make(lines)),
        Effect.provide(capture),
        Effect.provideService(References.MinimumLogLevel, minimum)
      )
    )
    return lines
  }
  const direct = (lines: Array<string>) => AccessLog.layerWriter((line) => lines.push(line))
  const viaLogger = () => AccessLog.layerLogger

  it("writes, straight to its writer, the line the logger writes for the same request", () => {
    const straight = parse(only(recorded(direct, "Info")))
    const logged = parse(only(recorded(viaLogger, "Info")))
    expect(straight).toEqual({ ...logged, timestamp: straight["timestamp"] })
    expect(straight["annotations"]).toEqual({
      request_id: entry.requestId,
      method: "POST",
      path: entry.path,
      status: 499,
      code: "client_closed_request",
      duration_ms: 12
    })
    expect(Number.isNaN(Date.parse(String(straight["timestamp"])))).toBe(false)
  })

  it("writes nothing when LOG_LEVEL keeps Info lines out, like the logger", () => {
    expect(recorded(direct, "Warn")).toEqual([])
    expect(recorded(viaLogger, "Warn")).toEqual([])
    expect(recorded(direct, "Debug")).toHaveLength(1)
  })
})
