/**
 * `modelgate <command>`: the operator commands (commands.ts) over the store the gateway uses. One
 * command per run; the exit code says how it went: 0 done, 1 refused or failed (unknown key, the
 * database unreachable), 2 bad usage (an unknown command or option, a malformed value).
 */
import { readFileSync } from "node:fs"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, ConfigProvider, Console, Effect, Exit, Layer, Logger, Option, References } from "effect"
import { CliError, CliOutput, Command } from "effect/cli"
import { modelgate } from "./commands.js"
import { type CliIo, consoleOf, Stdin } from "./io.js"
import { unknownCommandText } from "./mistyped.js"

export type { CliIo } from "./io.js"

/** modelgate's package.json above this module: two levels up from src/cli and dist/cli, one from the .build bundle. */
const versionOf = (): string => {
  for (const up of ["../../package.json", "../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), "utf8")) as { readonly name?: unknown; readonly version?: unknown }
      if (pkg.name === "modelgate" && typeof pkg.version === "string") return pkg.version
    } catch {
      // not there: try the next
    }
  }
  return "unknown"
}

const version = versionOf()

const cli = Command.runWith(modelgate, { version })

/** One line per parse error; an unknown command names the group it belongs to (mistyped.ts). */
const errorLines = (errors: ReadonlyArray<CliError.CliError>) =>
  errors.map((e) => `error: ${e._tag === "UnknownSubcommand" ? unknownCommandText(modelgate, e.parent ?? ["modelgate"], e.subcommand) : e.message}`)

/**
 * effect/cli's output, except: `--version` prints the bare version (as scripts read it), and a
 * command line that does not parse goes to stderr as `error: …` lines (the same prefix as a
 * failed command), the command's help after them, so stdout only ever carries output.
 */
const presenterFor = (formatter: CliOutput.Formatter): CliOutput.Presenter => ({
  present: (event) => {
    switch (event._tag) {
      case "Version":
        return Console.log(event.version)
      case "InvalidInvocation": {
        // An unknown command is the one mistake to show: its flags were refused only because of it,
        // and the line names the command to type, which the parent's whole help would bury.
        const unknown = event.errors.filter((e) => e._tag === "UnknownSubcommand")
        if (unknown.length > 0) return Console.error(errorLines(unknown).join("\n"))
        return Console.error([...errorLines(event.errors), "", formatter.formatHelpDoc(event.helpDoc)].join("\n"))
      }
      case "Help":
        return CliOutput.defaultPresenter.present(event)
    }
  }
})

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
  // Colours only for a person at a terminal: piped or redirected, help is plain text.
  const formatter = CliOutput.defaultFormatter({ colors: io.colors === true && (env["NO_COLOR"] ?? "") === "" })
  const exit = await Effect.runPromiseExit(
    cli(args).pipe(
      Effect.provideService(Console.Console, consoleOf(io)),
      Effect.provideService(Stdin, io.stdin ?? Stdin.defaultValue()),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ ...env })),
      Effect.provideService(CliOutput.Presenter, presenterFor(formatter)),
      Effect.provideService(CliOutput.Formatter, formatter),
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
    // A parse error: the presenter has printed what was wrong, with the command's usage. Bare
    // help (a group named without a command) is no error.
    if (e._tag === "ShowHelp") return e.errors.length === 0 ? 0 : 2
    // A value the command itself refused (an amount of 0, a malformed DATABASE_URL).
    io.err(`error: ${e.message}`)
    return 2
  }
  io.err(`error: ${messageOf(e)}`)
  return 1
}
