/**
 * The databases the store suite runs against: SQLite always (a temporary file per test), and
 * PostgreSQL when reachable at DATABASE_TEST_URL (a fresh schema per test, dropped at the end).
 * When PostgreSQL is unreachable its tests are skipped with a warning, unless
 * MODELGATE_REQUIRE_SERVICES=1 (CI), where that is a failure.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "effect/sql"
import { Effect, Layer, ManagedRuntime, References, Result } from "effect"
import { AppConfig } from "../../src/config/AppConfig.js"
import type { GatewayData } from "../../src/config/resolve.js"
import { KeyRepo } from "../../src/services/keyRepo/KeyRepo.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { sqlClientLayer } from "../../src/store/client.js"
import { configSyncLayer, databaseLayer } from "../../src/store/Database.js"
import { Store, type StoreOptions } from "../../src/store/Store.js"
import { type DatabaseTarget, parseDatabaseUrl } from "../../src/store/target.js"
import { decodeConfig } from "../../src/config/load.js"
import * as KeyRepoSql from "../../src/store/keyRepoSql.js"
import * as QuotaSql from "../../src/store/quotaSql.js"

export interface TestDatabase {
  /** What DATABASE_URL would say (the CLI takes it). */
  readonly url: string
  readonly target: DatabaseTarget
}

export interface Backend {
  readonly name: "sqlite" | "postgres"
  /** A new, empty database for one test. */
  readonly fresh: () => Promise<TestDatabase>
  /** Drops everything `fresh` created. */
  readonly cleanup: () => Promise<void>
}

const targetOf = (url: string) => Result.getOrThrowWith(parseDatabaseUrl(url), (m) => new Error(m))

export const sqliteBackend = (): Backend => {
  const dir = mkdtempSync(join(tmpdir(), "modelgate-store-"))
  let n = 0
  return {
    name: "sqlite",
    fresh: async () => {
      const url = `sqlite:${join(dir, `t${++n}.db`)}`
      return { url, target: targetOf(url) }
    },
    cleanup: async () => rmSync(dir, { recursive: true, force: true })
  }
}

export const PG_URL = process.env["DATABASE_TEST_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
export const requireServices = process.env["MODELGATE_REQUIRE_SERVICES"] === "1"

/** Connects once (3 s at most): is PostgreSQL there? */
export const postgresReachable = async (): Promise<boolean> => {
  const probe = Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`), sqlClientLayer(targetOf(PG_URL)))
  const exit = await Effect.runPromiseExit(probe.pipe(Effect.timeout("3 seconds")))
  return exit._tag === "Success"
}

export const postgresBackend = (): Backend => {
  const admin = ManagedRuntime.make(sqlClientLayer(targetOf(PG_URL)))
  const run = `mg_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
  const schemas: Array<string> = []
  return {
    name: "postgres",
    fresh: async () => {
      const schema = `${run}_${schemas.length + 1}`
      schemas.push(schema)
      await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`CREATE SCHEMA ${schema}`)))
      const base = new URL(PG_URL)
      base.searchParams.set("schema", schema)
      return { url: base.toString(), target: targetOf(base.toString()) }
    },
    cleanup: async () => {
      for (const schema of schemas) {
        await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)))
      }
      await admin.dispose()
    }
  }
}

export type StoreServices = Store | KeyRepo | Quota | SqlClient.SqlClient

/** The SQL services over a database, as the gateway builds them (migrate, sync the config, Store). */
export const openStore = (
  db: TestDatabase,
  data: GatewayData,
  options: Partial<StoreOptions> = {},
  logger: Layer.Layer<never> = Layer.succeed(References.MinimumLogLevel, "Warn")
): ManagedRuntime.ManagedRuntime<StoreServices, unknown> => {
  const base = Layer.provideMerge(configSyncLayer, databaseLayer(db.target))
  const store = Layer.provideMerge(Store.layerWith({ reportOrphans: false, ...options }), base)
  return ManagedRuntime.make(
    Layer.mergeAll(KeyRepoSql.layer, QuotaSql.layer).pipe(
      Layer.provideMerge(store),
      Layer.provide(AppConfig.layer(data, "test")),
      Layer.provide(logger)
    )
  )
}

/** A config as the gateway resolves it (as test/support/gateway.ts's testData, without loading the server). */
export const dataOf = (config: unknown): GatewayData =>
  Result.getOrThrowWith(decodeConfig(config, "test", {}), (e) => new Error(e.message))

