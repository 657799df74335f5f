/**
 * The SqlClient for a target. SQLite is the embedded default (Node's built-in node:sqlite, through
 * sqliteClient.ts); the PostgreSQL driver is imported only when the target asks for it, so a SQLite
 * start never pays for loading pg.
 */
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { StoreError } from "../domain/errors.js"
import * as SqliteClient from "./sqliteClient.js"
import { type DatabaseTarget, describeTarget } from "./target.js"

export type Dialect = "sqlite" | "pg"

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })

const openFailed = (target: DatabaseTarget) => (cause: unknown) =>
  new StoreError({ message: `cannot open the database ${describeTarget(target)}`, cause })

/**
 * WAL with synchronous=NORMAL: a commit survives a crash of the process (what we guard against);
 * only an OS crash or power loss can drop the last commits. busy_timeout lets the admin CLI and
 * the server share the file without SQLITE_BUSY failures.
 */
export const sqlitePragmas = ["PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON", "PRAGMA synchronous = NORMAL"]

const sqlite = (target: Extract<DatabaseTarget, { _tag: "Sqlite" }>): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  Layer.unwrapEffect(
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
      return Effect.forEach(sqlitePragmas, (p) => sql.unsafe(p), { discard: true })
    }),
    Layer.mapError(openFailed(target))
  )

const postgres = (target: Extract<DatabaseTarget, { _tag: "Postgres" }>): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  Layer.unwrapEffect(
    Effect.tryPromise({ try: () => import("@effect/sql-pg/PgClient"), catch: openFailed(target) }).pipe(
      Effect.map((Pg) => Pg.layer({ url: target.url, applicationName: "modelgate", maxConnections: 10 }))
    )
  ).pipe(Layer.mapError(openFailed(target)))

export const sqlClientLayer = (target: DatabaseTarget): Layer.Layer<SqlClient.SqlClient, StoreError> =>
  target._tag === "Sqlite" ? sqlite(target) : postgres(target)
