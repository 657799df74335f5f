/**
 * The store a command works on, chosen as `npm start` chooses it, so the CLI beside a running
 * gateway opens that gateway's database: --database, else DATABASE_URL, else the demo's
 * ./data/demo.db when no config is given (no --config, no MODELGATE_CONFIG: what `npm start` serves
 * then), else ./data/modelgate.db. One difference on purpose: the demo ignores DATABASE_URL (so it
 * never writes its public key into a real database); the CLI writes no config, and an operator
 * who sets DATABASE_URL means that database. The choice is printed on stderr before anything runs.
 * Migrated on open (the config file is the gateway's to sync, not the CLI's). Changes are
 * announced to running gateways over Redis when REDIS_URL is set.
 */
import { existsSync } from "node:fs"
import { isAbsolute, resolve } from "node:path"
import { Config, Console, Effect, Layer, Option, Redacted, Result } from "effect"
import { CliError } from "effect/cli"
import type { SqlClient } from "effect/sql"
import { Admin } from "../admin/Admin.js"
import { accountKeySettingsLayerConfig } from "../config/AppConfig.js"
import { LiveStore } from "../admin/LiveStore.js"
import { databaseLayer } from "../store/Database.js"
import { type DatabaseTarget, DEFAULT_SQLITE_FILE, DEMO_SQLITE_FILE, describeTarget, parseDatabaseUrl, sqliteTarget } from "../store/target.js"

export interface DatabaseChoice {
  readonly target: DatabaseTarget
  /** Why this one, for the line on stderr. */
  readonly because: string
}

/** What decides: the --database and --config flags and the environment (DATABASE_URL, MODELGATE_CONFIG). */
export interface DatabaseInputs {
  readonly database: Option.Option<string>
  readonly config: Option.Option<string>
  readonly env: Readonly<Record<string, string | undefined>>
}

const set = (value: string | undefined) => value !== undefined && value.trim() !== ""

export const chooseDatabase = ({ database, config, env }: DatabaseInputs): Result.Result<DatabaseChoice, string> => {
  if (Option.isSome(database)) return Result.map(parseDatabaseUrl(database.value), (target) => ({ target, because: "--database" }))
  const url = env["DATABASE_URL"]
  if (set(url)) return Result.map(parseDatabaseUrl(url), (target) => ({ target, because: "DATABASE_URL" }))
  if (Option.isSome(config)) return Result.succeed({ target: sqliteTarget(DEFAULT_SQLITE_FILE), because: `--config given, DATABASE_URL unset` })
  if (set(env["MODELGATE_CONFIG"])) {
    return Result.succeed({ target: sqliteTarget(DEFAULT_SQLITE_FILE), because: "MODELGATE_CONFIG set, DATABASE_URL unset" })
  }
  return Result.succeed({
    target: sqliteTarget(DEMO_SQLITE_FILE),
    because: "the demo's: no --config, MODELGATE_CONFIG or DATABASE_URL"
  })
}

/** `database: sqlite:/abs/data/demo.db (the demo's: …)`: a SQLite path made absolute, a new file said so. */
export const describeChoice = ({ target, because }: DatabaseChoice): string => {
  if (target._tag === "Postgres" || target.filename === ":memory:") return `database: ${describeTarget(target)} (${because})`
  const path = isAbsolute(target.filename) ? target.filename : resolve(target.filename)
  const fresh = existsSync(path) ? "" : "; a new, empty database: no gateway has used it"
  return `database: sqlite:${path} (${because}${fresh})`
}

const optionalEnv = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Effect.map(Option.filter((v: string) => v.trim() !== "")),
    Effect.orElseSucceed(() => Option.none<string>())
  )

export const onDatabase = <A, E>(
  flags: { readonly database: Option.Option<string>; readonly config: Option.Option<string> },
  work: Effect.Effect<A, E, Admin | SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const env = {
      DATABASE_URL: Option.getOrUndefined(yield* optionalEnv("DATABASE_URL")),
      MODELGATE_CONFIG: Option.getOrUndefined(yield* optionalEnv("MODELGATE_CONFIG"))
    }
    const choice = chooseDatabase({ ...flags, env })
    if (Result.isFailure(choice)) return yield* Effect.fail(new CliError.ValidationError({ message: choice.failure }))
    yield* Console.error(describeChoice(choice.success))
    const redis = yield* optionalEnv("REDIS_URL")
    const live = Option.match(redis, {
      onNone: () => LiveStore.layerNone,
      onSome: (u) => LiveStore.layerAnnounce(Redacted.make(u))
    })
    return yield* Effect.provide(
      work,
      Admin.layer("cli").pipe(
        Layer.provideMerge(databaseLayer(choice.success.target)),
        Layer.provide(live),
        // MODELGATE_SECRET_KEY (and _PREVIOUS), ADMIN_ACCOUNT_ENV_PREFIX: as the gateway reads them.
        Layer.provide(accountKeySettingsLayerConfig)
      )
    )
  })
