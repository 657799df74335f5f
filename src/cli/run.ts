/**
 * `modelgate <command>`: the admin command line over the same store the gateway uses. It opens the
 * database named by --database or DATABASE_URL (default ./data/modelgate.db), applies any pending
 * migrations, runs one command and exits. It does not sync the config file: the gateway does at start.
 */
import { Cause, Effect, Either, Exit, Layer, Logger, LogLevel, Redacted } from "effect"
import { Admin } from "../admin/Admin.js"
import { LiveStore } from "../admin/LiveStore.js"
import { databaseLayer } from "../store/Database.js"
import { parseDatabaseUrl } from "../store/target.js"
import { type Args, parseArgs, UsageError } from "./args.js"
import { type Command, keysCreate, keysDisable, keysList, type Print, usage, usersTopup } from "./commands.js"

export const HELP = `modelgate: admin commands (the database is DATABASE_URL, or --database <url>; default ./data/modelgate.db)

  modelgate keys create --user <user> --group <group> [--name <id>] [--quota-usd <usd>]
                        [--expires-at <date>] [--concurrency <n>]   issue a key (printed once)
  modelgate keys list [--user <user>] [--group <group>]
  modelgate keys disable <key id>
  modelgate users topup <user> <usd> [--note <text>]
  modelgate usage                                                    per key: today and total
  modelgate usage --key <key id> [--start-date YYYY-MM-DD] [--end-date YYYY-MM-DD]
                                                                     that key's /v1/usage report
  modelgate usage --open                                             requests not (yet) settled

The demo (npm start with no config) keeps its data in ./data/demo.db: --database sqlite:./data/demo.db`

export interface CliIo {
  readonly out: Print
  readonly err: Print
}

const commandFor = (args: Args, io: CliIo): Command | "help" => {
  const [group, verb, ...rest] = args.positional
  if (group === undefined || group === "help" || args.options.has("help")) return "help"
  const key = `${group} ${verb ?? ""}`.trim()
  switch (group === "usage" ? "usage" : key) {
    case "keys create":
      return keysCreate(args, io.out)
    case "keys list":
      return keysList(args, io.out)
    case "keys disable":
      return keysDisable(args, rest[0], io.out)
    case "users topup":
      return usersTopup(args, rest[0], rest[1], io.out)
    case "usage":
      if (verb !== undefined) throw new UsageError(`unexpected '${verb}' after usage`)
      return usage(args, io.out)
    default:
      throw new UsageError(`unknown command '${key}' (try: modelgate help)`)
  }
}

/** Runs one command; resolves to the process exit code (0 ok, 1 failed, 2 bad usage). */
export const runCli = async (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>,
  io: CliIo
): Promise<number> => {
  let command: Command | "help"
  let args: Args
  try {
    args = parseArgs(argv)
    command = commandFor(args, io)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    io.err(`error: ${e.message}`)
    return 2
  }
  if (command === "help") {
    io.out(HELP)
    return 0
  }
  const target = parseDatabaseUrl(args.options.get("database") ?? env["DATABASE_URL"])
  if (Either.isLeft(target)) {
    io.err(`error: ${target.left}`)
    return 2
  }
  // Log lines (a migration ran, a warning) go to stderr so stdout stays the command's output.
  const logger = Logger.make(({ logLevel, message }) =>
    io.err(`${logLevel.label.toLowerCase()}: ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  )
  // Changes are announced to running gateways over Redis when REDIS_URL is set.
  const redisUrl = env["REDIS_URL"]?.trim()
  const live = redisUrl === undefined || redisUrl === "" ? LiveStore.layerNone : LiveStore.layerAnnounce(Redacted.make(redisUrl))
  const exit = await Effect.runPromiseExit(
    command.pipe(
      Effect.provide(Admin.layer("cli").pipe(Layer.provideMerge(databaseLayer(target.right)), Layer.provide(live))),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(LogLevel.Warning)
    )
  )
  if (Exit.isSuccess(exit)) return 0
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "Some") {
    const cause = failure.value.cause
    io.err(`error: ${failure.value.message}${cause instanceof Error ? ` (${cause.message})` : ""}`)
  } else io.err(`error: ${Cause.pretty(exit.cause)}`)
  return 1
}
