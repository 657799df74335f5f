/** Operator changes run in one transaction; what fails in the infrastructure becomes one StoreError. */
import { SqlClient, type Statement } from "effect/sql"
import { Effect } from "effect"
import { AdminConflict, type AdminError, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import { StoreError } from "../../domain/errors.js"

type OperatorError = AdminConflict | AdminInvalid | AdminNotFound

const isOperatorError = (e: unknown): e is OperatorError =>
  e instanceof AdminConflict || e instanceof AdminInvalid || e instanceof AdminNotFound

/** Like orStoreError, but the operator's errors (not found, conflict, invalid) stay typed. */
export const storeErrorsBut = (message: string) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, Extract<E, AdminError> | StoreError, R> =>
  Effect.mapError(self, (e) =>
    isOperatorError(e)
      ? (e as Extract<E, AdminError>)
      : e instanceof StoreError
      ? e
      : new StoreError({ message, cause: e }))

/**
 * `select`, locking the rows it reads until the transaction ends on PostgreSQL, so a change that
 * reads a row to rewrite it (and to record its "before") is not working from a read another change
 * has since overtaken. SQLite has no row locks: there the transaction holds the write lock (below).
 */
export const forUpdate = <A extends object>(sql: SqlClient.SqlClient, select: Statement.Statement<A>) =>
  sql.onDialectOrElse({ pg: () => sql<A>`${select} FOR UPDATE`, orElse: () => select })

/**
 * `effect` in one transaction: all of its writes and its audit row, or none. On SQLite the
 * transaction takes the write lock at its BEGIN (IMMEDIATE): a deferred one reads a snapshot, and
 * its first write after another connection's commit (the settlement writer thread, the CLI) then
 * fails with "database is locked" rather than waiting. On PostgreSQL a change locks the rows it
 * reads to change (SELECT ... FOR UPDATE, users.ts).
 */
export const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>, message: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const transaction = sql.withTransaction(effect)
    return sql.onDialectOrElse({
      sqlite: () => Effect.provideService(transaction, SqlClient.BeginTransaction, "BEGIN IMMEDIATE"),
      orElse: () => transaction
    })
  }).pipe(storeErrorsBut(message))
