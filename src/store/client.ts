/**
 * The SqlClient for a target. SQLite is the embedded default (our own client over node:sqlite,
 * sqliteClient.ts); the PostgreSQL driver is imported only when the target asks for it, so a
 * SQLite start never pays for loading it.
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { Context, Effect, Layer, Result } from "effect"
import { SqlClient } from "effect/sql"
import { storeTimeoutConfig } from "../config/storeTimeout.js"
import { StoreError } from "../domain/errors.js"
import * as SqliteClient from "./sqliteClient.js"
import { boundedPgClient } from "./statementDeadline.js"
import { type DatabaseTarget, describeTarget } from "./target.js"

export type Dialect = "sqlite" | "pg"

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })

const openFailed = (target: DatabaseTarget) => (cause: unknown) =>
  new StoreError({ message: `cannot open the database ${describeTarget(target)}`, cause })

/** A layer whose build failure is `f` of its error (its services and scope as they were). */
const mapLayerError = <A, E, E2>(layer: Layer.Layer<A, E>, f: (e: E) => E2): Layer.Layer<A, E2> =>
  Layer.effectContext(Effect.mapError(Layer.build(layer), f))

/**
 * WAL with synchronous=NORMAL: a commit survives a crash of the process (what we guard against);
 * only an OS crash or power loss can drop the last commits. busy_timeout lets the admin CLI and
 * the server share the file without SQLITE_BUSY failures.
 */
export const sqlitePragmas = ["PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON", "PRAGMA synchronous = NORMAL"]

/** WAL on a file (node:sqlite leaves the journal mode as it is). */
const walPragma = "PRAGMA journal_mode = WAL"

const sqlite = (target: Extract<DatabaseTarget, { _tag: "Sqlite" }>): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  mapLayerError(Layer.unwrap(
    Effect.try({
      try: () => {
        if (target.filename !== ":memory:") mkdirSync(dirname(target.filename), { recursive: true })
        return SqliteClient.layer({ filename: target.filename })
      },
      catch: openFailed(target)
    })
  ).pipe(
    Layer.tap((ctx) => {
      const sql = Context.get(ctx, SqlClient.SqlClient)
      const pragmas = target.filename === ":memory:" ? sqlitePragmas : [walPragma, ...sqlitePragmas]
      return Effect.forEach(pragmas, (p) => sql.unsafe(p), { discard: true })
    })
  ), openFailed(target))

/**
 * BIGINT columns (money in micro-dollars, epoch milliseconds) read as JS numbers, as on SQLite:
 * @effect/sql-pg 4 reads them as bigint by default. A value beyond 2^53 fails rather than rounds.
 */
const int8AsNumber = (Types: typeof import("@effect/sql-pg/PgTypes")) => {
  const registry = Types.makeRegistry()
  const bytes = new Uint8Array(8)
  const view = new DataView(bytes.buffer)
  registry.register<number | bigint>(Types.OID.int8, {
    decode: (b) => {
      const n = new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(0)
      const value = Number(n)
      return Number.isSafeInteger(value)
        ? Result.succeed(value)
        : Result.fail(new Types.CodecError({ message: `int8 ${n} is beyond JavaScript's safe integers` }))
    },
    encode: (value) => {
      if (typeof value === "number" && !Number.isSafeInteger(value)) {
        return Result.fail(new Types.CodecError({ message: `int8 expects an integer, received ${value}` }))
      }
      view.setBigInt64(0, BigInt(value))
      return Result.succeed(bytes.slice())
    }
  })
  return registry
}

/**
 * The pool's connections are opened within the store timeout, and each statement is bounded by it
 * (statementDeadline.ts): a database that accepts connections but never answers fails requests
 * with 503 `store_unavailable` in seconds rather than holding them.
 */
const postgres = (target: Extract<DatabaseTarget, { _tag: "Postgres" }>): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  mapLayerError(
    Layer.unwrap(
      Effect.all([
        Effect.tryPromise({
          try: () => Promise.all([import("@effect/sql-pg/PgClient"), import("@effect/sql-pg/PgTypes")]),
          catch: openFailed(target)
        }),
        Effect.mapError(storeTimeoutConfig, (cause) => new StoreError({ message: "cannot read STORE_TIMEOUT_MS", cause }))
      ]).pipe(
        Effect.map(([[Pg, Types], millis]) => {
          const pool = Pg.layer({
            url: target.url,
            applicationName: "modelgate",
            maxConnections: 10,
            types: int8AsNumber(Types),
            ...(millis > 0 ? { connectTimeout: millis } : {})
          })
          if (millis <= 0) return pool
          return Layer.unwrap(
            Effect.map(Effect.service(SqlClient.SqlClient), (inner) => boundedPgClient(inner, Pg.makeCompiler(), millis))
          ).pipe(Layer.provide(pool))
        })
      )
    ),
    openFailed(target)
  )

export const sqlClientLayer = (target: DatabaseTarget): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  target._tag === "Sqlite" ? sqlite(target) : postgres(target)
