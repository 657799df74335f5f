/**
 * The store a command works on: --database, else DATABASE_URL, else ./data/modelgate.db, migrated
 * on open (the config file is the gateway's to sync, not the CLI's). Changes are announced to
 * running gateways over Redis when REDIS_URL is set.
 */
import { Config, Effect, Layer, Option, Redacted, Result } from "effect"
import { CliError } from "effect/cli"
import type { SqlClient } from "effect/sql"
import { Admin } from "../admin/Admin.js"
import { LiveStore } from "../admin/LiveStore.js"
import { databaseLayer } from "../store/Database.js"
import { parseDatabaseUrl } from "../store/target.js"

const optionalEnv = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Effect.map(Option.filter((v: string) => v.trim() !== "")),
    Effect.orElseSucceed(() => Option.none<string>())
  )

export const onDatabase = <A, E>(
  database: Option.Option<string>,
  work: Effect.Effect<A, E, Admin | SqlClient.SqlClient>
) =>
  Effect.gen(function*() {
    const url = Option.isSome(database) ? database : yield* optionalEnv("DATABASE_URL")
    const target = parseDatabaseUrl(Option.getOrUndefined(url))
    if (Result.isFailure(target)) return yield* Effect.fail(new CliError.ValidationError({ message: target.failure }))
    const redis = yield* optionalEnv("REDIS_URL")
    const live = Option.match(redis, {
      onNone: () => LiveStore.layerNone,
      onSome: (u) => LiveStore.layerAnnounce(Redacted.make(u))
    })
    return yield* Effect.provide(work, Admin.layer("cli").pipe(Layer.provideMerge(databaseLayer(target.success)), Layer.provide(live)))
  })
