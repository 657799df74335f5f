/**
 * Start-up problems said so a person can act on them: the environment checked before anything
 * opens (a database, a port), every mistake of a kind in one block, and the failures an operator
 * causes (a bad config file, a busy port, an unreachable database) printed as a sentence naming
 * the setting to change, without a stack. A failure not listed here is a bug and keeps its stack.
 */
import { Cause, Config, Effect, Layer, LogLevel, Option, Runtime, Schema, SchemaIssue } from "effect"
import { StoreError } from "../domain/errors.js"
import { accountKeySettingsFromEnv, Settings } from "./AppConfig.js"
import { ConfigError } from "./load.js"
import { nearest } from "./suggest.js"

/** Settings wrong in the environment, all of them. */
export class EnvironmentError extends Schema.TaggedError<EnvironmentError>()("EnvironmentError", {
  problems: Schema.Array(Schema.String)
}) {}

export const LOG_FORMATS = ["json", "pretty"] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

export interface LogSettings {
  readonly level: LogLevel.LogLevel
  readonly format: LogFormat
}

/** LOG_LEVEL as Effect spells the levels, in any case as the CLI's --log-level takes them. */
const LEVELS: ReadonlyArray<LogLevel.LogLevel> = ["Trace", "Debug", "Info", "Warn", "Error", "Fatal", "None", "All"]

/** Other names for a level: the CLI's `warning`; `off`, Effect 3's name for `None`, which earlier releases documented. */
const ALIASES: Readonly<Record<string, LogLevel.LogLevel>> = { warning: "Warn", off: "None" }

const levelNamed = (text: string): LogLevel.LogLevel | undefined => {
  const lower = text.trim().toLowerCase()
  return LEVELS.find((l) => l.toLowerCase() === lower) ?? ALIASES[lower]
}

const didYouMean = (typed: string, choices: ReadonlyArray<string>) => {
  const guess = nearest(typed, choices)
  return guess === undefined ? "" : ` (did you mean '${guess}'?)`
}

const isPort = (text: string) => /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535

/** `NAME=value: message` for each problem Config found, the value as set. */
export const configErrorLines = (e: Config.ConfigError, env: Readonly<Record<string, string | undefined>>): ReadonlyArray<string> => {
  if (!Schema.isSchemaError(e.cause)) return [e.message]
  return SchemaIssue.makeFormatterStandardSchemaV1()(e.cause.issue).issues.map((issue) => {
    const name = (issue.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".")
    const value = env[name]
    return `${value === undefined ? name : `${name}=${value}`}: ${issue.message}`
  })
}

const optionalString = (name: string) =>
  Config.option(Config.String(name)).pipe(Effect.map(Option.getOrUndefined), Effect.orElseSucceed(() => undefined))

/**
 * The log settings, after checking every setting read from the environment at start (PORT,
 * ADMIN_PORT and its token, LOG_LEVEL, LOG_FORMAT, the Settings, MODELGATE_SECRET_KEY): nothing is opened before they
 * are known to be usable, and all that is wrong is reported at once.
 */
export const checkEnvironment = (
  env: Readonly<Record<string, string | undefined>>,
  /** The admin listener's settings (admin/listen.ts adminListenFromEnv), read only when ADMIN_PORT is a port. */
  adminListen: Effect.Effect<unknown, Config.ConfigError | Error>
): Effect.Effect<LogSettings, EnvironmentError> =>
  Effect.gen(function*() {
    const problems: Array<string> = []
    const levelText = (yield* optionalString("LOG_LEVEL")) ?? "Info"
    const level = levelNamed(levelText)
    if (level === undefined) {
      problems.push(`LOG_LEVEL=${levelText}: not a log level; use one of ${LEVELS.join(", ")}${didYouMean(levelText, LEVELS)}`)
    }
    const format = ((yield* optionalString("LOG_FORMAT")) ?? "json").trim()
    const logFormat = LOG_FORMATS.find((f) => f === format.toLowerCase())
    if (logFormat === undefined) problems.push(`LOG_FORMAT=${format}: use json (the default) or pretty`)
    let adminPortOk = true
    for (const name of ["PORT", "ADMIN_PORT"]) {
      const value = yield* optionalString(name)
      if (value !== undefined && !isPort(value.trim())) {
        problems.push(`${name}=${value}: not a port; use a whole number from 1 to 65535${name === "PORT" ? " (default 8080)" : ""}`)
        if (name === "ADMIN_PORT") adminPortOk = false
      }
    }
    if (adminPortOk) {
      const admin = yield* Effect.result(adminListen)
      if (admin._tag === "Failure") {
        problems.push(...(admin.failure instanceof Config.ConfigError ? configErrorLines(admin.failure, env) : [admin.failure.message]))
      }
    }
    const settings = yield* Effect.result(Effect.scoped(Layer.build(Settings.layerConfig)))
    if (settings._tag === "Failure") problems.push(...configErrorLines(settings.failure, env))
    // Its failures never repeat a value: MODELGATE_SECRET_KEY is one.
    const keys = yield* Effect.result(accountKeySettingsFromEnv)
    if (keys._tag === "Failure") problems.push(keys.failure.message)
    if (problems.length > 0) return yield* new EnvironmentError({ problems })
    return { level: level ?? "Info", format: logFormat ?? "json" }
  })

/** The operating-system error under a failure (a listen error's code, port and address), if any. */
const systemError = (u: unknown): { code?: unknown; port?: unknown; address?: unknown } | undefined => {
  for (let e: unknown = u, depth = 0; typeof e === "object" && e !== null && depth < 4; depth++) {
    if ("code" in e && typeof e.code === "string") return e
    e = "cause" in e ? e.cause : undefined
  }
  return undefined
}

/** Which setting chose `port`: ADMIN_PORT when it is the admin listener's, else PORT. */
const portSetting = (port: unknown, env: Readonly<Record<string, string | undefined>>) =>
  port !== undefined && env["ADMIN_PORT"]?.trim() === String(port) && env["PORT"]?.trim() !== String(port) ? "ADMIN_PORT" : "PORT"

const block = (title: string, problems: ReadonlyArray<string>) =>
  problems.length === 1 ? `${title}: ${problems[0]}` : `${title}:\n  - ${problems.join("\n  - ")}`

/**
 * A store failure: its message, after "the database: " when it does not say what it is about (a
 * Redis failure says Redis), and its cause's message unless the message already carries it.
 */
const storeFailureText = (e: StoreError): string => {
  const about = /\b(database|DATABASE_URL|PostgreSQL|SQLite|Redis|REDIS_URL|STORE_TIMEOUT_MS)\b/.test(e.message) ? "" : "the database: "
  const cause = e.cause instanceof Error && !e.message.includes(e.cause.message) ? `: ${e.cause.message}` : ""
  return `${about}${e.message}${cause}`
}

/** What to print for a start that failed, or undefined when the failure is not an operator's to fix (a bug: keep its stack). */
export const startupFailureText = (cause: Cause.Cause<unknown>, env: Readonly<Record<string, string | undefined>>): string | undefined => {
  const found = Cause.findErrorOption(cause)
  if (Option.isNone(found)) return undefined
  const e = found.value
  if (e instanceof EnvironmentError) return block("modelgate did not start: the environment has problems", e.problems)
  if (e instanceof ConfigError) return `modelgate did not start: ${e.message}`
  if (e instanceof Config.ConfigError) return block("modelgate did not start", configErrorLines(e, env))
  // The settlement journal (services/journal): its message names the path and the setting to change.
  if (typeof e === "object" && e !== null && "_tag" in e && e._tag === "JournalError" && "message" in e) {
    return `modelgate did not start: ${String(e.message)}`
  }
  if (e instanceof StoreError) return `modelgate did not start: ${storeFailureText(e)}`
  if (typeof e === "object" && e !== null && "_tag" in e && e._tag === "ServeError") {
    const os = systemError(e)
    const setting = portSetting(os?.port, env)
    switch (os?.code) {
      case "EADDRINUSE":
        return `modelgate did not start: port ${String(os.port)} is in use; set ${setting} to a free port (or stop what listens there)`
      case "EACCES":
        return `modelgate did not start: port ${String(os.port)} needs privileges this process does not have; set ${setting} to 1024 or above`
      case "EADDRNOTAVAIL":
        return `modelgate did not start: ${String(os.address)} is not an address of this machine; set ${setting === "PORT" ? "HOST" : "ADMIN_HOST"}`
    }
  }
  return undefined
}

/** A failure already printed: Effect's runMain neither logs it again nor prints a stack; the exit code is 1. */
export class StartupFailed extends Error {
  override readonly [Runtime.errorReported] = false
}
