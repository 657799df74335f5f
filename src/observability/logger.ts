/**
 * The process's log: one JSON object per line on stdout (`message`, `logLevel`, `timestamp`,
 * `annotations`, `cause` when there is one): the line shape of Effect 3's `Logger.json`, which
 * operators' log queries and the access log (accessLog.ts) keep, without the fiber id and spans
 * nobody reads. A Logger of Effect 4's own (`Logger.make`, installed with `Logger.layer`).
 *
 * Why not Effect 4's `Logger.formatJson` / `consoleJson`: their line is another shape (`level`,
 * `fiberId`, `spans`), and measured they cost more per line (docs/decisions.md has the figures).
 * This builds the line with one JSON.stringify per value and writes the lines of one event-loop
 * turn together.
 */
import { Cause, Effect, Layer, Logger, References } from "effect"

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

/** A log line for `message`, the fiber's log annotations and `cause`, ending in a newline. */
export const formatLine = (options: Logger.Options<unknown>): string => {
  let line = `{"message":${JSON.stringify(messageText(options.message))},"logLevel":"${options.logLevel.toUpperCase()}",` +
    `"timestamp":"${options.date.toISOString()}"`
  if (options.cause.reasons.length > 0) line += `,"cause":${JSON.stringify(Cause.pretty(options.cause))}`
  const fields = options.fiber.getRef(References.CurrentLogAnnotations)
  let annotations = ""
  for (const key in fields) {
    annotations += `${annotations === "" ? "" : ","}${JSON.stringify(key)}:${jsonValue(fields[key])}`
  }
  if (annotations !== "") line += `,"annotations":{${annotations}}`
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

/** The JSON-lines logger writing to `write`. */
export const jsonLinesLogger = (write: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make((options) => write(formatLine(options)))

/** Replaces the loggers with JSON lines on stdout (stdout to a file or a pipe is synchronous on Linux). */
export const layer: Layer.Layer<never> = Logger.layer([Effect.sync(() => jsonLinesLogger(stdoutLines()))])
