/**
 * An @effect/sql SqlClient over Node's built-in SQLite (`node:sqlite`, Node 24), so the gateway
 * needs no native addon. It covers what the store uses: one connection, prepared statements
 * (cached by SQL text), `unsafe`, values (`executeValues`), raw results, `reserve` and
 * `withTransaction` (nested calls become savepoints: @effect/sql's Client.make does that), and the
 * database closed when the layer's scope closes.
 *
 * Behaviour kept from the better-sqlite3 client it replaces (@effect/sql-sqlite-node):
 * - journal_mode = WAL on open, and a 5 s busy timeout from the first statement on (better-sqlite3's
 *   default; node:sqlite's is 0, so `PRAGMA journal_mode` could fail at once against another
 *   process's connection).
 * - INTEGER columns come back as JS numbers: the store never asked for safe integers, and money
 *   (micro-dollars) stays far below 2^53. Unlike better-sqlite3, node:sqlite refuses to read a
 *   larger integer as a number (an error rather than a rounded value).
 * - One connection, shared: a statement outside a transaction waits while a transaction (or a
 *   `reserve`d connection) holds it.
 * Differences to keep in mind: rows are null-prototype objects; a JS boolean binds as 1/0
 * (better-sqlite3 refused it); a SQL text with several statements runs only the first
 * (better-sqlite3 refused it), so migrations stay one statement per string.
 * Not carried over, because nothing here uses them: `SafeIntegers`, `transformResultNames` /
 * `transformQueryNames`, streaming queries, export/backup/loadExtension.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Layer, Scope } from "effect"

export interface SqliteClientConfig {
  /** A file name, or ":memory:". */
  readonly filename: string
  /** How many prepared statements are kept, by SQL text (default 200). */
  readonly prepareCacheSize?: number | undefined
}

/** The SqlClient, with the configuration it was opened with (the writer thread opens the same file). */
export interface SqliteClient extends Client.SqlClient {
  readonly config: SqliteClientConfig
}

export const SqliteClient = Context.GenericTag<SqliteClient>("modelgate/store/SqliteClient")

const BUSY_TIMEOUT_MILLIS = 5000

interface Prepared {
  readonly statement: StatementSync
  /** It returns rows (a SELECT, a PRAGMA, a statement with RETURNING): run with all(), not run(). */
  readonly reader: boolean
}

const prepare = (db: DatabaseSync, sql: string): Prepared => {
  const statement = db.prepare(sql)
  return { statement, reader: statement.columns().length > 0 }
}

export const make = (config: SqliteClientConfig): Effect.Effect<SqliteClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const cacheSize = config.prepareCacheSize ?? 200
    const cache = new Map<string, Prepared>()

    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const db = new DatabaseSync(config.filename, { timeout: BUSY_TIMEOUT_MILLIS })
          try {
            db.exec("PRAGMA journal_mode = WAL")
          } catch (e) {
            db.close()
            throw e
          }
          return db
        },
        catch: (cause) => new SqlError({ cause, message: `Failed to open the database ${config.filename}` })
      }),
      (db) =>
        Effect.sync(() => {
          cache.clear()
          if (db.isOpen) db.close()
        })
    )

    /** A cached prepared statement; the oldest entry makes room when the cache is full. */
    const prepared = (sql: string): Prepared => {
      let entry = cache.get(sql)
      if (entry === undefined) {
        entry = prepare(db, sql)
        if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!)
        cache.set(sql, entry)
      }
      return entry
    }

    // Synchronous work in one step: prepare (from the cache) and run, any throw a SqlError.
    const attempt = <A>(message: string, body: () => A): Effect.Effect<A, SqlError> =>
      Effect.try({ try: body, catch: (cause) => new SqlError({ cause, message }) })

    const params = (values: ReadonlyArray<unknown>) => values as Array<SQLInputValue>

    const rowsOf = (entry: Prepared, values: ReadonlyArray<unknown>): ReadonlyArray<any> => {
      if (entry.reader) return entry.statement.all(...params(values))
      entry.statement.run(...params(values))
      return []
    }

    const connection: Connection = {
      execute: (sql, values, transformRows) =>
        attempt("Failed to execute statement", () => {
          const rows = rowsOf(prepared(sql), values)
          return transformRows ? transformRows(rows) : rows
        }),
      executeRaw: (sql, values) =>
        attempt("Failed to execute statement", () => {
          const entry = prepared(sql)
          return entry.reader ? entry.statement.all(...params(values)) : entry.statement.run(...params(values))
        }),
      executeValues: (sql, values) =>
        attempt("Failed to execute statement", () => {
          const entry = prepared(sql)
          if (!entry.reader) {
            entry.statement.run(...params(values))
            return []
          }
          entry.statement.setReturnArrays(true)
          try {
            return entry.statement.all(...params(values)) as unknown as ReadonlyArray<ReadonlyArray<unknown>>
          } finally {
            entry.statement.setReturnArrays(false)
          }
        }),
      executeUnprepared: (sql, values, transformRows) =>
        attempt("Failed to execute statement", () => {
          const rows = rowsOf(prepare(db, sql), values ?? [])
          return transformRows ? transformRows(rows) : rows
        }),
      executeStream: () => Effect.dieMessage("executeStream is not implemented for node:sqlite") as never
    }

    // One connection: a transaction (or a reserved connection) holds the permit for its scope,
    // a plain statement only waits for it to be free.
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )

    const client = yield* Client.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    return Object.assign(client, { config })
  })

/** Provides the client both as SqliteClient and as the generic SqlClient. */
export const layer = (config: SqliteClientConfig): Layer.Layer<SqliteClient | Client.SqlClient, SqlError> =>
  Layer.scopedContext(
    Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
