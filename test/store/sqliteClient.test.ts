/**
 * The node:sqlite SqlClient (src/store/sqliteClient.ts) on its own: what the store relies on beyond
 * plain queries, and the better-sqlite3 client's behaviour it keeps (WAL, integers as numbers, the
 * SQLite dialect, the database closed with the layer's scope).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "effect/sql"
import { Cause, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { dialectOf, sqlClientLayer } from "../../src/store/client.js"
import { sqliteTarget } from "../../src/store/target.js"
import * as SqliteClient from "../../src/store/sqliteClient.js"

const dir = mkdtempSync(join(tmpdir(), "modelgate-sqlite-client-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let n = 0
const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>, filename = join(dir, `c${++n}.db`)) =>
  Effect.runPromise(Effect.provide(effect, sqlClientLayer(sqliteTarget(filename))))

const withTable = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.as(sql`CREATE TABLE t (id TEXT PRIMARY KEY, micros BIGINT NOT NULL)`, sql))

describe("node:sqlite SqlClient", () => {
  it("answers the sqlite dialect, opens the file in WAL mode and reads integers as numbers", async () => {
    const out = await run(Effect.gen(function*() {
      const sql = yield* withTable
      yield* sql`INSERT INTO t ${sql.insert({ id: "a", micros: 4_000_000_000_123 })}`
      return {
        dialect: dialectOf(sql),
        journal: yield* sql`PRAGMA journal_mode`,
        rows: yield* sql`SELECT id, micros, micros * 2 AS twice FROM t`,
        values: yield* sql`SELECT id, micros FROM t`.values,
        raw: yield* sql`UPDATE t SET micros = micros + 1`.raw
      }
    }))
    expect(out.dialect).toBe("sqlite")
    expect(out.journal).toEqual([{ journal_mode: "wal" }])
    expect(out.rows).toEqual([{ id: "a", micros: 4_000_000_000_123, twice: 8_000_000_000_246 }])
    expect(out.values).toEqual([["a", 4_000_000_000_123]])
    expect(out.raw).toMatchObject({ changes: 1 })
  })

  it("commits a transaction, and rolls back a nested one (a savepoint) on its own", async () => {
    const rows = await run(Effect.gen(function*() {
      const sql = yield* withTable
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (id, micros) VALUES ('kept', 1)`
        const inner = sql.withTransaction(Effect.andThen(sql`INSERT INTO t (id, micros) VALUES ('dropped', 2)`, Effect.fail("no")))
        yield* Effect.exit(inner)
      }))
      const failed = sql.withTransaction(Effect.andThen(sql`INSERT INTO t (id, micros) VALUES ('outer', 3)`, Effect.fail("no")))
      yield* Effect.exit(failed)
      return yield* sql`SELECT id FROM t ORDER BY id`
    }))
    expect(rows).toEqual([{ id: "kept" }])
  })

  it("fails a bad statement with a SqlError, and runs unprepared statements", async () => {
    const out = await run(Effect.gen(function*() {
      const sql = yield* withTable
      const bad = yield* Effect.flip(sql`INSERT INTO t (id, micros) VALUES ('x', NULL)`)
      const unprepared = yield* sql`SELECT ${sql.unsafe("41 + 1")} AS n`.unprepared
      return { bad, unprepared }
    }))
    expect(out.bad).toMatchObject({ _tag: "SqlError" })
    expect(String((out.bad as { cause: unknown }).cause)).toContain("NOT NULL constraint failed")
    expect(out.unprepared).toEqual([{ n: 42 }])
  })

  it("closes the database with the layer's scope: later queries fail as SqlError", async () => {
    const scope = await Effect.runPromise(Scope.make())
    const ctx = await Effect.runPromise(Layer.buildWithScope(SqliteClient.layer({ filename: ":memory:" }), scope))
    const select = Effect.provide(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 AS one`), ctx)
    expect(await Effect.runPromise(select)).toEqual([{ one: 1 }])
    await Effect.runPromise(Scope.close(scope, Exit.void))
    const exit = await Effect.runPromiseExit(select)
    expect(Exit.isFailure(exit) && (Cause.squash(exit.cause) as { _tag?: string })._tag).toBe("SqlError")
  })
})
