/**
 * A bound on how long the store waits for PostgreSQL: for a connection from the pool (a new one
 * included), then for the answer to each statement. A database that accepts connections but never
 * answers would otherwise hold each request for as long as its client waits: the driver has a
 * connect timeout but no query timeout, and TCP keep-alive cannot tell a stalled server from a busy
 * one while the server's host still acknowledges what it is sent.
 *
 * Past the bound the statement fails at once with a connection SqlError (a StoreError, 503
 * `store_unavailable`, to the request), without waiting for the driver's cancellation (a cancel
 * request to a stalled server waits seconds of its own). The connection it was sent on is released
 * with the statement outstanding, which the driver answers by closing it and the pool by opening a
 * fresh one for the next statement: once the database answers again, statements succeed again.
 *
 * Streams are bounded only in getting their connection: a long export may rightly take long.
 * Migrations are exempt (Unbounded): an index built on a large table may take minutes.
 *
 * Work that waits on the store in more than one step (the admin API: the settlements in flight,
 * then its transaction) is bounded as a whole by `withinStoreTimeout`: bounded one by one, its
 * waits would add up.
 */
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Client from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { ConnectionError, SqlError, UnknownError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { storeTimeoutConfig } from "../config/storeTimeout.js"
import { StoreError } from "../domain/errors.js"

/** Provided as true around work that may rightly take long (migrations): no bound on its statements. */
export const Unbounded = Context.Reference<boolean>("modelgate/store/Unbounded", { defaultValue: () => false })

const noAnswer = (millis: number, operation: string) =>
  new SqlError({
    reason: new ConnectionError({
      cause: new Error(`PostgreSQL did not answer within ${millis} ms (STORE_TIMEOUT_MS)`),
      message: `the database did not answer within ${millis} ms`,
      operation
    })
  })

type Rows = <A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>

/** One leased connection whose statements are bounded; after one overran, it takes no more. */
class BoundedConnection implements Connection {
  private overran: SqlError | undefined

  constructor(private readonly inner: Connection, private readonly millis: number) {}

  /**
   * `effect`, or the failure once `millis` have passed. The statement is left running in a fiber
   * of its own rather than interrupted and awaited: the lease's release ends it (see above).
   */
  private bound<A>(effect: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> {
    return Effect.flatMap(Unbounded, (unbounded) => {
      if (unbounded) return effect
      if (this.overran !== undefined) return Effect.fail(this.overran)
      return Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
        Fiber.join(fiber).pipe(
          Effect.timeoutOrElse({
            duration: this.millis,
            orElse: () =>
              Effect.suspend(() => {
                // Inside a transaction the ROLLBACK would wait behind the stalled statement.
                this.overran = noAnswer(this.millis, "query")
                return Effect.fail(this.overran)
              })
          }),
          Effect.onInterrupt(() => Fiber.interrupt(fiber))
        ))
    })
  }

  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined) {
    return this.bound(this.inner.execute(sql, params, transformRows))
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.inner.executeRaw(sql, params))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.inner.executeValues(sql, params))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.inner.executeValuesUnprepared(sql, params))
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined) {
    return this.bound(this.inner.executeUnprepared(sql, params, transformRows))
  }
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined): Stream.Stream<unknown, SqlError> {
    return this.inner.executeStream(sql, params, transformRows)
  }
}

/** PostgreSQL answers COMMIT with ROLLBACK when the transaction had failed (as @effect/sql-pg checks). */
const commit = (conn: Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []), (result) =>
    typeof result === "object" && result !== null && "command" in result && result.command === "ROLLBACK"
      ? Effect.fail(
        new SqlError({
          reason: new UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

/**
 * A SqlClient over `inner` (a PostgreSQL client, for its pool and driver) whose every statement
 * leases its own connection (`inner.reserve`) within `millis` and is answered within `millis`.
 * `compiler` is the PostgreSQL statement compiler `inner` was built with.
 */
export const boundedPgClient = (
  inner: Client.SqlClient,
  compiler: Statement.Compiler,
  millis: number
): Layer.Layer<Client.SqlClient> => {
  const lease = Effect.flatMap(Unbounded, (unbounded) => {
    const reserve = Effect.map(inner.reserve, (conn): Connection => new BoundedConnection(conn, millis))
    return unbounded
      ? reserve
      : Effect.timeoutOrElse(reserve, { duration: millis, orElse: () => Effect.fail(noAnswer(millis, "connect")) })
  })
  return Layer.effect(
    Client.SqlClient,
    Client.make({
      acquirer: lease,
      transactionAcquirer: lease,
      compiler,
      driver: inner.driver,
      spanAttributes: [["db.system.name", "postgresql"]],
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
    })
  ).pipe(Layer.provide(Reactivity.layer))
}

/**
 * The bound for `sql`'s work as a whole: STORE_TIMEOUT_MS on PostgreSQL, where its statements are
 * bounded by it too; 0 (none) on SQLite, whose statements run to their end in this process.
 */
export const storeTimeoutFor = (sql: Client.SqlClient): Effect.Effect<number, StoreError> =>
  sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    ? Effect.mapError(storeTimeoutConfig, (cause) => new StoreError({ message: "cannot read STORE_TIMEOUT_MS", cause }))
    : Effect.succeed(0)

/**
 * `effect`, or a StoreError (503 `store_unavailable`) once `millis` have passed (no bound when 0
 * or less). The answer does not wait for `effect` to stop: it is interrupted in the background,
 * where its ROLLBACK waits on the stalled database in turn. Interrupted before its COMMIT, a change
 * is rolled back, not applied after its caller was told it failed.
 */
export const withinStoreTimeout = (millis: number) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StoreError, R> =>
  millis <= 0
    ? effect
    : Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
      Fiber.join(fiber).pipe(
        Effect.timeoutOrElse({
          duration: millis,
          orElse: () =>
            Effect.andThen(
              Effect.forkDetach(Fiber.interrupt(fiber)),
              Effect.fail(new StoreError({ message: `the store did not answer within ${millis} ms`, cause: noAnswer(millis, "query") }))
            )
        }),
        Effect.onInterrupt(() => Fiber.interrupt(fiber))
      ))
