/**
 * Runs the migrations that a database has not seen yet, in one transaction, at start. Idempotent:
 * a second run finds everything applied and does nothing. On PostgreSQL an advisory lock makes
 * instances that start together take turns instead of racing on the DDL.
 *
 * Kept rather than effect/sql's Migrator: existing databases record their migrations in
 * `modelgate_migrations (version, name, applied_at BIGINT epoch ms)`, where the Migrator keeps
 * `effect_sql_migrations (migration_id, name, created_at TIMESTAMP)`; and the Migrator fails a run
 * that finds another in progress, where instances starting together here wait on the advisory
 * lock and then find nothing to do. It also refuses a database newer than this build.
 */
import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { StoreError } from "../domain/errors.js"
import { dialectOf } from "./client.js"
import { type Migration, migrations as all } from "./migrations.js"
import { DbInt, decodeRows, orStoreError } from "./rows.js"

/** An arbitrary constant: the advisory lock id modelgate's migrations serialise on. */
const MIGRATION_LOCK = 7_460_227_001

const Applied = Schema.Struct({ version: DbInt })

export const migrate = (migrations: ReadonlyArray<Migration> = all) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const run = Effect.gen(function*() {
      if (dialectOf(sql) === "pg") yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
      yield* sql`CREATE TABLE IF NOT EXISTS modelgate_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at BIGINT NOT NULL
      )`
      const applied = new Set(
        (yield* decodeRows(Applied)(yield* sql`SELECT version FROM modelgate_migrations`)).map((r) => r.version)
      )
      const newest = Math.max(0, ...applied)
      const known = Math.max(0, ...migrations.map((m) => m.version))
      if (newest > known) {
        return yield* new StoreError({
          message: `the database schema is at version ${newest}, newer than this modelgate knows (${known}); upgrade modelgate`
        })
      }
      const pending = migrations.filter((m) => !applied.has(m.version)).sort((a, b) => a.version - b.version)
      for (const m of pending) {
        for (const statement of m.statements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO modelgate_migrations (version, name, applied_at) VALUES (${m.version}, ${m.name}, ${yield* Clock.currentTimeMillis})`
        yield* Effect.logInfo("database migrated").pipe(Effect.annotateLogs({ version: m.version, name: m.name }))
      }
      return pending.map((m) => m.version)
    })
    return yield* sql.withTransaction(run)
  }).pipe(orStoreError("database migration failed"))
