/**
 * Schema readers for a request body read leniently: a field of an unexpected type reads as absent,
 * an object keeps the keys its schema does not declare, and a parse that finished is taken as its Exit
 * (no fiber). Built once at module load; the Responses body schema (body.ts) is made of them.
 */
import { Effect, Exit, Predicate, Schema, SchemaAST, SchemaIssue, SchemaParser } from "effect"

/**
 * The parsers below answer with an Exit whenever they can: Schema 4 keeps a parse synchronous, a
 * plain function call, while every step answers with an Exit, and falls back to running Effects
 * (about 25x the cost on a Codex-sized body, measured) as soon as one step answers with another Effect.
 */
const ABSENT = Exit.succeed(undefined)

/** `result` as the Exit it already is, if it is one. */
export const exitOf = <A, E>(result: Effect.Effect<A, E>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(result) ? (result as Exit.Exit<A, E>) : undefined

/** A finished parse seen as an Exit of another success or failure type (the part it does not carry). */
export const retyped = <A, E>(exit: Exit.Exit<unknown, unknown>): Exit.Exit<A, E> => exit as Exit.Exit<A, E>

/** `result`, or `undefined` where it failed. */
const orAbsent = <A>(result: Effect.Effect<A, SchemaIssue.Issue>): Effect.Effect<A | undefined> => {
  const exit = exitOf(result)
  if (exit === undefined) return Effect.orElseSucceed(result, () => undefined)
  return Exit.isSuccess(exit) ? retyped(exit) : ABSENT
}

/** The guard for a primitive keyword, so a lenient leaf costs a `typeof` rather than a parse. */
const keywordGuard = (ast: SchemaAST.AST): ((u: unknown) => boolean) | undefined => {
  if (ast.checks !== undefined) return undefined
  switch (ast._tag) {
    case "String":
      return Predicate.isString
    case "Number":
      return Predicate.isNumber
    case "Boolean":
      return Predicate.isBoolean
    default:
      return undefined
  }
}

/** A schema decoded from anything (the request's JSON), to a type the gateway reads. */
export type Reader<A> = Schema.Codec<A, unknown>

/**
 * `schema` where the client's value fits it, `undefined` where it does not: never a failure.
 * For fields the gateway reads in passing and must not refuse (the upstream judges them).
 */
export const lenient = <S extends Schema.Top>(schema: S): Reader<S["Type"] | undefined> =>
  Schema.declareConstructor<S["Type"] | undefined, unknown>()([schema], ([inner]) => {
    const guard = keywordGuard(inner.ast)
    if (guard !== undefined) return (u) => (guard(u) ? Exit.succeed(u as S["Type"]) : ABSENT)
    const decode = SchemaParser.decodeUnknownEffect(inner)
    return (u, _ast, options) => orAbsent(decode(u, options))
  }) as Reader<S["Type"] | undefined>

/**
 * An optional key read leniently: absent, or of the wrong type, is `undefined`. (`optionalKey`:
 * the lenient schema already takes `undefined`; `Schema.optional` would wrap it in a union.)
 */
export const maybe = <S extends Schema.Top>(schema: S) => Schema.optionalKey(lenient(schema))

/** An optional key of any value, kept as is. */
export const anything = Schema.optionalKey(Schema.Unknown)

/** A JSON object passed through as is (no copy): JSON Schemas, metadata. */
export const JsonObject = Schema.declare(
  (u): u is { readonly [key: string]: unknown } => Predicate.isObject(u),
  { identifier: "JsonObject" }
)

/** The keys of an item or tool the gateway does not interpret, kept in its typed view. */
export type Rest = { readonly [key: string]: unknown }

export type Decoder<A> = (u: unknown, options?: SchemaAST.ParseOptions) => Effect.Effect<A, SchemaIssue.Issue>

/**
 * Whether every key of `decoded` holds what `u` holds there: then `u` itself is the decoded value
 * with its other keys (no copy; the view is read, never changed), as for almost every item.
 */
const sameValues = (u: Rest, decoded: object): boolean => {
  for (const key in decoded) if ((decoded as Rest)[key] !== u[key]) return false
  return true
}

/**
 * Decodes `struct`'s fields and keeps the object's other keys as they are: the value
 * `Schema.StructWithRest(fields, [Schema.Record(...)])` decodes to, without decoding each extra key.
 */
export const keepingRest = <A extends object>(struct: Reader<A>): Decoder<A & Rest> => {
  const decode = SchemaParser.decodeUnknownEffect(struct)
  const withRest = (u: unknown, decoded: A, options: SchemaAST.ParseOptions | undefined) =>
    // A struct decodes only from an object: the guard is for the compiler.
    Predicate.isObject(u)
      ? Exit.succeed(sameValues(u, decoded) ? (u as A & Rest) : { ...u, ...decoded })
      : Exit.fail(new SchemaIssue.InvalidType(struct.ast, u, options))
  return (u, options) => {
    const result = decode(u, options)
    const exit = exitOf(result)
    if (exit === undefined) return Effect.flatMap(result, (decoded) => withRest(u, decoded, options))
    return Exit.isSuccess(exit) ? withRest(u, exit.value, options) : retyped(exit)
  }
}

/** An object schema whose decoded value keeps the keys `struct` does not declare. */
export const open = <A extends object>(struct: Reader<A>): Reader<A & Rest> =>
  Schema.declareConstructor<A & Rest, unknown>()([struct], () => {
    const decode = keepingRest(struct)
    return (u, _ast, options) => decode(u, options)
  }) as Reader<A & Rest>

/** `Schema.Array(element)`, read from anything. */
export const list = <A>(element: Reader<A>): Reader<ReadonlyArray<A>> => Schema.Array(element) as Reader<ReadonlyArray<A>>
