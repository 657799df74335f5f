/**
 * The process's log on stdout, as JSON lines (the default) or, with LOG_FORMAT=pretty, one line a
 * person reads at a terminal.
 *
 * JSON: one object per line (`message`, `logLevel`, `timestamp`, `annotations`, `cause` when there
 * is one): the line shape of Effect 3's `Logger.json`, which operators' log queries and the access
 * log (accessLog.ts) keep, without the fiber id and spans nobody reads. A Logger of Effect 4's own
 * (`Logger.make`, installed with `Logger.layer`).
 *
 * Why not Effect 4's `Logger.formatJson` / `consoleJson`: their line is another shape (`level`,
 * `fiberId`, `spans`), and measured they cost more per line (docs/decisions.md has the figures).
 * This builds the line with one JSON.stringify per value and writes the lines of one event-loop
 * turn together.
 *
 * Pretty: `12:00:01.250 INFO  request method=POST path=/v1/responses status=200 …`, the level
 * coloured at a terminal, a cause indented under its line. Why not Effect 4's `consolePretty`: it
 * prints each annotation on a line of its own (a request has a dozen), and the access log reaches
 * stdout as JSON lines without passing through a logger (accessLog.ts, for its cost per request);
 * one renderer for both keeps one line per event, in one format.
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

/**
 * The process's one batched writer on stdout, shared by the logger and the access log
 * (accessLog.ts). With the pretty format (`layerFor("pretty")`, built before the services) the JSON
 * lines written to it are shown pretty.
 */
export const stdoutLines = (): ((line: string) => void) => (stdout ??= batchedWriter(process.stdout))

/** The JSON-lines logger writing to `write`. */
export const jsonLinesLogger = (write: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make((options) => write(formatLine(options)))

/** Replaces the loggers with JSON lines on stdout (stdout to a file or a pipe is synchronous on Linux). */
export const layer: Layer.Layer<never> = Logger.layer([Effect.sync(() => jsonLinesLogger(stdoutLines()))])

// ---------------------------------------------------------------------------------------------
// Pretty

interface Entry {
  readonly message: string
  readonly logLevel: string
  readonly date: Date
  readonly annotations: Readonly<Record<string, unknown>>
  readonly cause: string | undefined
}

const LEVEL_COLOURS: Readonly<Record<string, string>> = {
  TRACE: "90",
  DEBUG: "34",
  INFO: "32",
  WARN: "33",
  ERROR: "31",
  FATAL: "1;31"
}

const two = (n: number) => String(n).padStart(2, "0")

/** A value as a person reads it: a plain word bare, anything with spaces, quotes or structure as JSON. */
const prettyValue = (value: unknown): string =>
  typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : typeof value === "string" ? JSON.stringify(value) : jsonValue(value)

/** One entry as `HH:MM:SS.mmm LEVEL message key=value …` (local time), the cause's lines indented below. */
export const prettyLine = (entry: Entry, colours: boolean): string => {
  const d = entry.date
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`
  const level = entry.logLevel.toUpperCase().padEnd(5)
  const colour = LEVEL_COLOURS[entry.logLevel.toUpperCase()]
  let line = `${time} ${colours && colour !== undefined ? `\u001b[${colour}m${level}\u001b[0m` : level} ${entry.message}`
  for (const key in entry.annotations) line += ` ${key}=${prettyValue(entry.annotations[key])}`
  if (entry.cause !== undefined) line += `\n${entry.cause.replace(/^/gm, "    ")}`
  return `${line}\n`
}

/** A line `formatLine` (or the access log) wrote, shown pretty; a line that is not one of ours passes as it is. */
export const prettyFromJson = (line: string, colours: boolean): string => {
  try {
    const o = JSON.parse(line) as Record<string, unknown>
    if (typeof o["message"] !== "string" || typeof o["logLevel"] !== "string" || typeof o["timestamp"] !== "string") return line
    const annotations = typeof o["annotations"] === "object" && o["annotations"] !== null ? o["annotations"] as Record<string, unknown> : {}
    const cause = typeof o["cause"] === "string" ? o["cause"] : undefined
    return prettyLine({ message: o["message"], logLevel: o["logLevel"], date: new Date(o["timestamp"]), annotations, cause }, colours)
  } catch {
    return line
  }
}

/** The logger for LOG_FORMAT=pretty, writing to `write`. */
export const prettyLogger = (write: (line: string) => void, colours: boolean): Logger.Logger<unknown, void> =>
  Logger.make((options) =>
    write(prettyLine({
      message: messageText(options.message),
      logLevel: options.logLevel,
      date: options.date,
      annotations: options.fiber.getRef(References.CurrentLogAnnotations),
      cause: options.cause.reasons.length > 0 ? Cause.pretty(options.cause) : undefined
    }, colours))
  )

/**
 * The process's log in `format`. Pretty: the logger's lines, and the JSON lines the access log
 * writes to `stdoutLines()`, one line per event; colours only when stdout is a terminal.
 */
export const layerFor = (format: "json" | "pretty"): Layer.Layer<never> => {
  if (format === "json") return layer
  return Logger.layer([Effect.sync(() => {
    const colours = process.stdout.isTTY === true && (process.env["NO_COLOR"] ?? "") === ""
    const out = batchedWriter(process.stdout)
    stdout = (line) => out(prettyFromJson(line, colours))
    return prettyLogger(out, colours)
  })])
}
