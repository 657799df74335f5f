/**
 * A SqlClient over Node's built-in SQLite (`node:sqlite`, Node >= 24), built on effect/sql's own
 * constructors the way @effect/sql-pg builds its client: `SqlClient.make` with the SQLite statement
 * compiler, one connection shared through a semaphore (`SqlClient.makeSqliteAcquirers`), savepoints
 * for nested transactions, failures as `SqlError` (classified by SQLite's error code).
 *
 * What the store needs of it, and no more: parameters, `unsafe`, transactions (nested too),
 * `onDialectOrElse` answering "sqlite", rows as plain objects with INTEGERs as JS numbers (money is
 * integer micro-dollars, far below 2^53; a value beyond that is an error rather than a rounded
 * figure), and the database closed when the layer's scope closes.
 *
 * `node:sqlite` is synchronous: each statement runs on the event loop.
 * Settlement batches on a file are written from a thread of their own (writerThread.ts).
 */
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { Context, Effect, Layer, Scope, Semaphore, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Client from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { classifySqliteError, SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"

export interface SqliteClientConfig {
  readonly filename: string
  /** Prepared statements kept per connection (by SQL text). */
  readonly preparedCacheSize?: number | undefined
}

export interface SqliteClient extends Client.SqlClient {
  readonly config: SqliteClientConfig
}

/** Beside the SqlClient in the layer's context: the writer thread opens the same file. */
export const SqliteClient = Context.Service<SqliteClient>("modelgate/SqliteClient")

const sqlError = (operation: string) => (cause: unknown) =>
  new SqlError({
    reason: classifySqliteError(cause, {
      message: cause instanceof Error ? cause.message : `SQLite ${operation} failed`,
      operation
    })
  })

// node:sqlite returns rows with a null prototype; the store (and tests comparing rows) expect plain objects.
const plain = (rows: ReadonlyArray<Record<string, unknown>>): Array<Record<string, unknown>> => {
  const out = new Array<Record<string, unknown>>(rows.length)
  for (let i = 0; i < rows.length; i++) out[i] = { ...rows[i] }
  return out
}

type Param = null | number | bigint | string | NodeJS.ArrayBufferView

/**
 * Rows read with `setReturnArrays(true)`: arrays of values, where node's types still say records
 * (they do not follow the setting). The one cast of the client.
 */
const asRows = (rows: ReadonlyArray<unknown>): ReadonlyArray<ReadonlyArray<unknown>> => rows as ReadonlyArray<ReadonlyArray<unknown>>

const bindable = (params: ReadonlyArray<unknown>): Array<Param> =>
  params.map((p) => (typeof p === "boolean" ? (p ? 1 : 0) : p === undefined ? null : (p as Param)))

interface Prepared {
  readonly statement: StatementSync
  /** It returns rows (a SELECT, a RETURNING): `all`, else `run`. */
  readonly reader: boolean
}

const preparedOf = (statement: StatementSync): Prepared => ({ statement, reader: statement.columns().length > 0 })

class SqliteConnection implements Connection {
  private readonly prepared = new Map<string, Prepared>()

  constructor(readonly db: DatabaseSync, private readonly cacheSize: number) {}

  private prepare(sql: string): Prepared {
    let prepared = this.prepared.get(sql)
    if (prepared === undefined) {
      if (this.prepared.size >= this.cacheSize) this.prepared.clear()
      prepared = preparedOf(this.db.prepare(sql))
      this.prepared.set(sql, prepared)
    }
    return prepared
  }

  /** Rows for a statement that returns rows, else none. */
  private rows({ reader, statement }: Prepared, params: ReadonlyArray<unknown>): Array<Record<string, unknown>> {
    const bound = bindable(params)
    if (!reader) {
      statement.run(...bound)
      return []
    }
    return plain(statement.all(...bound) as Array<Record<string, unknown>>)
  }

  private run(sql: string, params: ReadonlyArray<unknown>, prepared: boolean) {
    return Effect.try({
      try: () => this.rows(prepared ? this.prepare(sql) : preparedOf(this.db.prepare(sql)), params),
      catch: sqlError("execute")
    })
  }

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.run(sql, params, true)
    return transformRows === undefined ? rows : Effect.map(rows, transformRows)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.try({
      try: () => {
        const statement = this.db.prepare(sql)
        const bound = bindable(params)
        return statement.columns().length === 0 ? statement.run(...bound) : statement.all(...bound)
      },
      catch: sqlError("execute")
    })
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.try({
      try: () => {
        const { statement } = this.prepare(sql)
        statement.setReturnArrays(true)
        try {
          return asRows(statement.all(...bindable(params)))
        } finally {
          statement.setReturnArrays(false)
        }
      },
      catch: sqlError("execute")
    })
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.try({
      try: () => {
        const statement = this.db.prepare(sql)
        statement.setReturnArrays(true)
        return asRows(statement.all(...bindable(params)))
      },
      catch: sqlError("execute")
    })
  }
  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.run(sql, params, false)
    return transformRows === undefined ? rows : Effect.map(rows, transformRows)
  }
  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    return Stream.fromIterableEffect(this.execute(sql, params, transformRows))
  }
}

/** Opens the database; closed (the WAL checkpointed) when the scope closes. */
export const make = (
  config: SqliteClientConfig
): Effect.Effect<SqliteClient, SqlError, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.try({ try: () => new DatabaseSync(config.filename), catch: sqlError("open") }),
      (db) => Effect.sync(() => db.isOpen && db.close())
    )
    const connection = new SqliteConnection(db, config.preparedCacheSize ?? 200)
    const acquirers = Client.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore: Semaphore.makeUnsafe(1),
      isTransaction: (conn) => conn.db.isTransaction
    })
    const client = yield* Client.make({
      acquirer: acquirers.acquirer,
      borrower: acquirers.borrower,
      transactionAcquirer: acquirers.transactionAcquirer,
      onCommitFailure: acquirers.onCommitFailure,
      isTransaction: acquirers.isTransaction,
      compiler: Statement.makeCompilerSqlite(),
      driver: "node:sqlite",
      spanAttributes: [["db.system.name", "sqlite"]],
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
    })
    return Object.assign(client, { config }) as SqliteClient
  })

/** Provides both SqliteClient and SqlClient; the database closes with the layer. */
export const layer = (config: SqliteClientConfig): Layer.Layer<SqliteClient | Client.SqlClient, SqlError> =>
  Layer.effectContext(
    Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
