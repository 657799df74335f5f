/**
 * The process's log: one JSON object per line on stdout, in the shape of Effect's `Logger.json`
 * (`message`, `logLevel`, `timestamp`, `annotations`, `cause` when there is one) without the fiber
 * id and spans nobody reads.
 *
 * Why not `Logger.json` itself: measured in process, it cost 100-170 µs of CPU per access-log line
 * (structured message, circular-safe stringify, one synchronous write per line), more than a
 * whole proxied request may cost (docs/performance.md). This builds the line with one
 * JSON.stringify per value and writes the lines of one event-loop turn together.
 */
import { Cause, Effect, HashMap, Layer, Logger } from "effect"

/** `value` as JSON text; what JSON cannot hold (circular, undefined, functions) as a JSON string. */
const jsonValue = (value: unknown): string => {
  try {
    const json = JSON.stringify(value)
    if (json !== undefined) return json
  } catch {
    // circular
  }
  return JSON.stringify(String(value))
}

const messageText = (message: unknown): string => {
  if (typeof message === "string") return message
  if (Array.isArray(message)) return message.map((m) => (typeof m === "string" ? m : jsonValue(m))).join(" ")
  return jsonValue(message)
}

/** A log line for `message`, `annotations` and `cause`, ending in a newline. */
export const formatLine = (options: Logger.Logger.Options<unknown>): string => {
  let line = `{"message":${JSON.stringify(messageText(options.message))},"logLevel":"${options.logLevel.label}",` +
    `"timestamp":"${options.date.toISOString()}"`
  if (!Cause.isEmpty(options.cause)) line += `,"cause":${JSON.stringify(Cause.pretty(options.cause))}`
  if (HashMap.size(options.annotations) > 0) {
    let annotations = ""
    for (const [key, value] of options.annotations) {
      annotations += `${annotations === "" ? "" : ","}${JSON.stringify(key)}:${jsonValue(value)}`
    }
    line += `,"annotations":{${annotations}}`
  }
  return `${line}}\n`
}

/**
 * Collects lines and writes them once per event-loop turn (setImmediate), and at once on exit, so
 * a crash loses at most the current turn's lines.
 */
export const batchedWriter = (out: NodeJS.WritableStream) => {
  let pending = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending === "") return
    const text = pending
    pending = ""
    out.write(text)
  }
  process.once("exit", flush)
  return (line: string) => {
    pending += line
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
}

let stdout: ((line: string) => void) | undefined

/** The process's one batched writer on stdout, shared by the logger and the access log (accessLog.ts). */
export const stdoutLines = (): ((line: string) => void) => (stdout ??= batchedWriter(process.stdout))

/** Replaces the default logger with JSON lines on stdout (stdout to a file or a pipe is synchronous on Linux). */
export const layer = Layer.unwrapEffect(
  Effect.sync(() => {
    const write = stdoutLines()
    return Logger.replace(Logger.defaultLogger, Logger.make((options) => write(formatLine(options))))
  })
)
