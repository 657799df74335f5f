/**
 * Decoding database rows into typed values. The two drivers differ: node:sqlite returns numbers,
 * pg returns BIGINT and SUM() as strings; both are accepted here so queries stay dialect-free.
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import { StoreError } from "../domain/errors.js"

/** An integer column: a JS number (SQLite) or a decimal string (PostgreSQL BIGINT / NUMERIC). */
export const DbInt = Schema.Union(Schema.Number, Schema.NumberFromString)
export const DbIntOrNull = Schema.NullOr(DbInt)
/** A 0/1 INTEGER flag (booleans are not portable: SQLite has no boolean type). */
export const DbFlag = Schema.transform(DbInt, Schema.Boolean, {
  strict: true,
  decode: (n) => n !== 0,
  encode: (b) => (b ? 1 : 0)
})

// One decoder per row schema, built on first use: building Schema.Array on every query showed up
// in the settlement profile.
const decoders = new WeakMap<object, (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<unknown>, ParseResult.ParseError>>()

const unexpectedRow = (e: ParseResult.ParseError) =>
  new StoreError({ message: `unexpected row from the database: ${ParseResult.TreeFormatter.formatErrorSync(e)}` })

/** Like `decodeRows`, without an Effect step: for the settlement writer's batch, decoded in one go. */
export const decodeRowsEither = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Either.Either<ReadonlyArray<A>, StoreError> => Either.mapLeft(decode(rows), unexpectedRow)
}

export const decodeRows = <A, I>(schema: Schema.Schema<A, I>) => (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<A>, StoreError> => {
  let decode = decoders.get(schema)
  if (decode === undefined) {
    decode = Schema.decodeUnknown(Schema.Array(schema))
    decoders.set(schema, decode)
  }
  return (decode(rows) as Effect.Effect<ReadonlyArray<A>, ParseResult.ParseError>).pipe(Effect.mapError(unexpectedRow))
}

/** Infrastructure failures become StoreError with a message saying what was being done. */
export const orStoreError = (message: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
  Effect.mapError(self, (e) => (e instanceof StoreError ? e : new StoreError({ message, cause: e })))

export const epochOrNull = (d: Date | undefined): number | null => (d === undefined ? null : d.getTime())
export const dateOrUndefined = (ms: number | null): Date | undefined => (ms === null ? undefined : new Date(ms))
export const flag = (b: boolean): number => (b ? 1 : 0)
