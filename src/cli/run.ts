/**
 * `modelgate <command>`: the operator commands (commands.ts) over the store the gateway uses. One
 * command per run; the exit code says how it went: 0 done, 1 refused or failed (unknown key, the
 * database unreachable), 2 bad usage (an unknown command or option, a malformed value).
 */
import { createRequire } from "node:module"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, ConfigProvider, Console, Effect, Exit, Layer, Logger, Option, References } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { modelgate } from "./commands.js"
import { type CliIo, consoleOf } from "./io.js"

export type { CliIo } from "./io.js"

const version = (createRequire(import.meta.url)("../../package.json") as { readonly version: string }).version

const cli = Command.runWith(modelgate, { version })

/** effect/cli's output, but `--version` prints the bare version (as scripts read it). */
const presenter: CliOutput.Presenter = {
  present: (event) => (event._tag === "Version" ? Console.log(event.version) : CliOutput.defaultPresenter.present(event))
}

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
  // Log lines (a migration ran, a warning) go to stderr so stdout stays the command's output.
  const logger = Logger.make(({ logLevel, message }) =>
    io.err(`${logLevel.toLowerCase()}: ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  )
  const exit = await Effect.runPromiseExit(
    cli(args).pipe(
      Effect.provideService(Console.Console, consoleOf(io)),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ ...env })),
      Effect.provideService(CliOutput.Presenter, presenter),
      Effect.provideService(CliOutput.Formatter, CliOutput.defaultFormatter({ colors: false })),
      Effect.provideService(References.MinimumLogLevel, "Warn"),
      Effect.provide(Layer.merge(NodeServices.layer, Logger.layer([logger])))
    )
  )
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.findErrorOption(exit.cause)
  if (Option.isNone(failure)) {
    io.err(`error: ${Cause.pretty(exit.cause)}`)
    return 1
  }
  const e: unknown = failure.value
  if (CliError.isCliError(e)) {
    // A parse error: effect/cli has printed what was wrong, with the command's usage. Bare
    // help (a group named without a command) is no error.
    if (e._tag === "ShowHelp") return e.errors.length === 0 ? 0 : 2
    // A value the command itself refused (an amount of 0, a malformed DATABASE_URL).
    io.err(`error: ${e.message}`)
    return 2
  }
  io.err(`error: ${messageOf(e)}`)
  return 1
}
