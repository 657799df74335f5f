/**
 * Wiring the SQL store: open the database, run the migrations, sync the configuration, then build
 * the Store that the SQL KeyRepo and Quota (keyRepoSql.ts, quotaSql.ts) share. One SqlClient per process.
 */
import { Config, Effect, Layer, Result } from "effect"
import type { SqlClient } from "effect/sql"
import { AppConfig, type AppConfigShape } from "../config/AppConfig.js"
import { StoreError } from "../domain/errors.js"
import { DEFAULT_STORE_TIMEOUT_MS, storeTimeoutConfig } from "../config/storeTimeout.js"
import { sqlClientLayer } from "./client.js"
import * as KeyRepoSql from "./keyRepoSql.js"
import { migrate } from "./migrate.js"
import { explainConnectFailure } from "./pgConnectFailure.js"
import { Unbounded } from "./statementDeadline.js"
import * as QuotaSql from "./quotaSql.js"
import * as UpstreamAccountsSql from "./upstreamAccountsSql.js"
import { Store, type StoreOptions } from "./Store.js"
import { syncConfig } from "./sync.js"
import { type DatabaseTarget, DEMO_SQLITE_FILE, describeTarget, parseDatabaseUrl, sqliteTarget } from "./target.js"

/**
 * A SqlClient for the target with the schema migrated (idempotent). The migration is the first
 * use of a PostgreSQL connection: a failure to connect is said with its address, reason and fix.
 */
export const databaseLayer = (target: DatabaseTarget): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  Layer.tap(sqlClientLayer(target), (ctx) =>
    Effect.provide(Effect.provideService(migrate(), Unbounded, true), ctx).pipe(
      Effect.catchTag("StoreError", (e) =>
        Effect.flatMap(connectTimeoutMillis, (millis) => Effect.fail(explainConnectFailure(target, e, millis) ?? e)))
    ))

/** The connect timeout client.ts gives the driver: STORE_TIMEOUT_MS, or the driver's 5 s when that is off. */
const connectTimeoutMillis = storeTimeoutConfig.pipe(
  Effect.map((millis) => (millis > 0 ? millis : 5_000)),
  Effect.orElseSucceed(() => DEFAULT_STORE_TIMEOUT_MS)
)

/** Writes the loaded configuration into the database (see sync.ts for the rules). */
export const configSyncLayer: Layer.Layer<never, StoreError, SqlClient.SqlClient | AppConfig> = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const report = yield* syncConfig(config.data)
    for (const note of report.notes) yield* Effect.logWarning(note)
  })
)

/**
 * The Store over a target, after migration and config sync, with the SqlClient it uses (the admin
 * operations read and write through it). Build it once and hand the same value to every layer that
 * needs it: layers are shared by reference, so they all then use one Store and one connection.
 */
export const storeLayer = (
  target: DatabaseTarget,
  options?: Partial<StoreOptions>
): Layer.Layer<Store | SqlClient.SqlClient, StoreError, AppConfig> =>
  (options === undefined ? Store.layer : Store.layerWith(options)).pipe(
    Layer.provideMerge(Layer.provideMerge(configSyncLayer, databaseLayer(target)))
  )

/**
 * `servicesLayer` overrides for SQL-backed KeyRepo and Quota sharing one Store, and that Store
 * (with its SqlClient) for whatever else must share it (the admin operations).
 */
export const sqlServices = (target: DatabaseTarget, options?: Partial<StoreOptions>) => {
  const store = storeLayer(target, options)
  return {
    keyRepo: KeyRepoSql.layer.pipe(Layer.provide(store)),
    quota: QuotaSql.layer.pipe(Layer.provide(store)),
    /** For the scheduler: the accounts, an operator's included, live. */
    upstreamAccounts: UpstreamAccountsSql.layer.pipe(Layer.provide(store)),
    store
  }
}

/**
 * DATABASE_URL decides, except in demo mode (no config): the demo always uses ./data/demo.db so it
 * never writes its public demo key into a database a real configuration will use.
 */
export const targetFor = Effect.fnUntraced(function*(config: AppConfigShape): Effect.fn.Return<DatabaseTarget, StoreError> {
  const url = yield* Config.option(Config.String("DATABASE_URL")).pipe(
    Effect.mapError((cause) => new StoreError({ message: "cannot read DATABASE_URL", cause }))
  )
  if (config.demoKey !== undefined) {
    if (url._tag === "Some" && url.value !== "") {
      yield* Effect.logWarning(`demo mode: DATABASE_URL is ignored, the demo uses ${DEMO_SQLITE_FILE}`)
    }
    return sqliteTarget(DEMO_SQLITE_FILE)
  }
  const target = parseDatabaseUrl(url._tag === "Some" ? url.value : undefined)
  if (Result.isFailure(target)) return yield* new StoreError({ message: target.failure })
  return target.success
})

export { describeTarget }
