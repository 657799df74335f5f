/** Operator changes run in one transaction; what fails in the infrastructure becomes one StoreError. */
import { SqlClient } from "effect/sql"
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

/** `effect` in one transaction: all of its writes and its audit row, or none. */
export const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>, message: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect)).pipe(storeErrorsBut(message))
