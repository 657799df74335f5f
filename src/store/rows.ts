/**
 * Decoding database rows into typed values. The two drivers differ: node:sqlite returns numbers,
 * pg returns BIGINT as bigint and SUM() as strings; all are accepted here so queries stay dialect-free.
 */
import { Effect, Result, Schema, SchemaTransformation } from "effect"
import { StoreError } from "../domain/errors.js"

/** A PostgreSQL BIGINT as @effect/sql-pg 4 reads it (a bigint): money and instants are far below 2^53. */
const NumberFromBigInt = Schema.BigInt.pipe(
  Schema.decodeTo(
    Schema.Number,
    SchemaTransformation.transform({ decode: (n: bigint) => Number(n), encode: (n: number) => BigInt(n) })
  )
)

/**
 * An integer column: a JS number (SQLite; PostgreSQL INTEGER), a bigint (PostgreSQL BIGINT) or a
 * decimal string (PostgreSQL NUMERIC, what SUM() of a BIGINT is).
 */
export const DbInt = Schema.Union([Schema.Number, NumberFromBigInt, Schema.NumberFromString])
export const DbIntOrNull = Schema.NullOr(DbInt)
/** A 0/1 INTEGER flag (booleans are not portable across the drivers). */
export const DbFlag = DbInt.pipe(
  Schema.decodeTo(
    Schema.Boolean,
    SchemaTransformation.transform({ decode: (n: number) => n !== 0, encode: (b: boolean): number => (b ? 1 : 0) })
  )
)

type RowSchema<A> = Schema.Codec<A, unknown>

// One decoder per row schema, built on first use: building Schema.Array on every query showed up
// in the settlement profile.
const decoders = new WeakMap<object, (rows: ReadonlyArray<unknown>) => Result.Result<ReadonlyArray<unknown>, Schema.SchemaError>>()

const decoderOf = <A>(schema: RowSchema<A>) => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknownResult(Schema.Array(schema))
    decoders.set(schema, decode)
  }
  return decode as (rows: ReadonlyArray<unknown>) => Result.Result<ReadonlyArray<A>, Schema.SchemaError>
}

const unexpectedRow = (e: Schema.SchemaError) => new StoreError({ message: `unexpected row from the database: ${e.message}` })

/** Like `decodeRows`, without an Effect step: for the settlement writer's batch, decoded in one go. */
export const decodeRowsResult = <A>(schema: RowSchema<A>) => {
  const decode = decoderOf(schema)
  return (rows: ReadonlyArray<unknown>): Result.Result<ReadonlyArray<A>, StoreError> => Result.mapError(decode(rows), unexpectedRow)
}

export const decodeRows = <A>(schema: RowSchema<A>) => (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, StoreError> => {
  const decoded = decoderOf(schema)(rows)
  return Result.isSuccess(decoded) ? Effect.succeed(decoded.success) : Effect.fail(unexpectedRow(decoded.failure))
}

/** Infrastructure failures become StoreError with a message saying what was being done. */
export const orStoreError = (message: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
  Effect.mapError(self, (e) => (e instanceof StoreError ? e : new StoreError({ message, cause: e })))

export const epochOrNull = (d: Date | undefined): number | null => (d === undefined ? null : d.getTime())
export const dateOrUndefined = (ms: number | null): Date | undefined => (ms === null ? undefined : new Date(ms))
export const flag = (b: boolean): number => (b ? 1 : 0)

/** A list of names as a JSON TEXT column (a group's models, its provider tools); NULL: none. */
export const NameList = Schema.NullOr(Schema.fromJsonString(Schema.Array(Schema.String)))

/** A group's provider tools as their column holds them: NULL when there are none. */
export const toolList = (tools: ReadonlyArray<string> | undefined): string | null =>
  tools === undefined || tools.length === 0 ? null : JSON.stringify(tools)
