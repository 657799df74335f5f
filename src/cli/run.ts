/**
 * `modelgate <command>`: the operator commands (commands.ts) over the store the gateway uses. One
 * command per run; the exit code says how it went: 0 done, 1 refused or failed (unknown key, the
 * database unreachable), 2 bad usage (an unknown command or option, a malformed value).
 */
import { createRequire } from "node:module"
import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, ConfigProvider, Effect, Exit, Logger, LogLevel, Option } from "effect"
import { modelgate } from "./commands.js"
import { type CliIo, consoleOf } from "./io.js"

export type { CliIo } from "./io.js"

const version = (createRequire(import.meta.url)("../../package.json") as { readonly version: string }).version

const cli = Command.run(modelgate, { name: "modelgate", version })

const messageOf = (e: unknown): string => {
  if (typeof e === "object" && e !== null && "message" in e && typeof e.message === "string") {
    const cause = "cause" in e && e.cause instanceof Error ? ` (${e.cause.message})` : ""
    return `${e.message}${cause}`
  }
  return String(e)
}

/** Runs one command; resolves to the process exit code. */
export const runCli = async (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>,
  io: CliIo
): Promise<number> => {
  // `modelgate help [command]` is `modelgate [command] --help`.
  const args = argv[0] === "help" ? [...argv.slice(1), "--help"] : [...argv]
  const vars = new Map(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined))
  // Log lines (a migration ran, a warning) go to stderr so stdout stays the command's output.
  const logger = Logger.make(({ logLevel, message }) =>
    io.err(`${logLevel.label.toLowerCase()}: ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  )
  const exit = await Effect.runPromiseExit(
    cli(["node", "modelgate", ...args]).pipe(
      Effect.withConsole(consoleOf(io)),
      Effect.withConfigProvider(ConfigProvider.fromMap(vars)),
      Effect.provide(NodeContext.layer),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(LogLevel.Warning)
    )
  )
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) {
    io.err(`error: ${Cause.pretty(exit.cause)}`)
    return 1
  }
  if (ValidationError.isValidationError(failure.value)) {
    // @effect/cli has printed what was wrong, with the command's usage.
    return 2
  }
  io.err(`error: ${messageOf(failure.value)}`)
  return 1
}
