/**
 * The upstream JSON the gateway reads, decoded with Schema: an error body (OpenAI or Anthropic
 * shape), the Responses `usage` object, and a JSON answer as an object or a typed failure.
 * Pure and total: nothing here throws, whatever the upstream sent.
 */
import { Effect, Option, Predicate, Result, Schema, SchemaTransformation } from "effect"
import { emptyUsage, type TokenUsage } from "./usage.js"

// ---------------------------------------------------------------------------------------------
// Error bodies
// ---------------------------------------------------------------------------------------------

/** A string field of an error body; absent, null or of another type reads as absent. */
const ErrorText = Schema.optionalKey(
  Schema.UndefinedOr(Schema.String).pipe(Schema.catchDecoding(() => Effect.succeed(Option.some(undefined))))
)

/** The error object of both shapes. Anthropic's has no code (read if some proxy adds one). */
const ErrorDetail = Schema.Struct({ message: ErrorText, type: ErrorText, code: ErrorText })

/** OpenAI: `{"error": {"message", "type", "param", "code"}}` (code and param are often null). */
export const OpenAIErrorBody = Schema.Struct({ error: ErrorDetail })

/** Anthropic: `{"type": "error", "error": {"type", "message"}}`. */
export const AnthropicErrorBody = Schema.Struct({ type: Schema.Literal("error"), error: ErrorDetail })

/** What an upstream said when it refused: each field only when the body carried it as a string. */
export interface UpstreamErrorInfo {
  readonly message?: string
  readonly code?: string
  readonly type?: string
}

const decodeErrorBody = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Union([AnthropicErrorBody, OpenAIErrorBody])))

/**
 * The message, code and type of an upstream error body, from its text. Anything else (not JSON,
 * another shape, fields of other types) gives empty fields. An Anthropic body has no code: its
 * `error.type` (e.g. "overloaded_error") is `type`, not `code`.
 */
export const decodeUpstreamError = (text: string): UpstreamErrorInfo => {
  const decoded = decodeErrorBody(text)
  if (Result.isFailure(decoded)) return {}
  const { error } = decoded.success
  return {
    ...(error.message !== undefined ? { message: error.message } : {}),
    ...(error.code !== undefined ? { code: error.code } : {}),
    ...(error.type !== undefined ? { type: error.type } : {})
  }
}

// ---------------------------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------------------------

/** A token count as billed: a finite positive number, floored; anything else is 0. */
const TokenCount = Schema.Unknown.pipe(Schema.decodeTo(
  Schema.Number,
  SchemaTransformation.transform({
    decode: (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0),
    encode: (n: number): unknown => n
  })
))
const count = Schema.optionalKey(TokenCount)

/** A details object; one that is not an object counts as empty (all zeros). */
const details = <S extends Schema.Constraint>(struct: S, empty: S["Type"]) =>
  Schema.optionalKey(Schema.catchDecoding<S>(() => Effect.succeed(Option.some(empty)))(struct))

/** The `usage` object as sent; a missing count is 0 (see ResponsesUsage). */
const ResponsesUsageWire = Schema.Struct({
  input_tokens: count,
  output_tokens: count,
  input_tokens_details: details(Schema.Struct({ cached_tokens: count, cache_write_tokens: count }), {}),
  output_tokens_details: details(Schema.Struct({ reasoning_tokens: count }), {})
})

/** The domain usage, checked against usage.ts's interface. */
const TokenUsageSchema: Schema.Codec<TokenUsage> = Schema.Struct({
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  cacheReadTokens: Schema.Number,
  cacheCreationTokens: Schema.Number,
  reasoningTokens: Schema.Number
})

/**
 * An OpenAI Responses `usage` object (response.completed, JSON answers) as a TokenUsage: every
 * count a non-negative integer, 0 where it is missing or unreadable. Fails only on a value that
 * is not an object.
 */
export const ResponsesUsage = ResponsesUsageWire.pipe(Schema.decodeTo(TokenUsageSchema, SchemaTransformation.transform({
  decode: (u: typeof ResponsesUsageWire.Type): TokenUsage => ({
    inputTokens: u.input_tokens ?? 0,
    outputTokens: u.output_tokens ?? 0,
    cacheReadTokens: u.input_tokens_details?.cached_tokens ?? 0,
    cacheCreationTokens: u.input_tokens_details?.cache_write_tokens ?? 0,
    reasoningTokens: u.output_tokens_details?.reasoning_tokens ?? 0
  }),
  encode: (u: TokenUsage): typeof ResponsesUsageWire.Type => ({
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    input_tokens_details: { cached_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheCreationTokens },
    output_tokens_details: { reasoning_tokens: u.reasoningTokens }
  })
})))

const decodeResponsesUsage = Schema.decodeUnknownResult(ResponsesUsage)

/**
 * Reads an OpenAI Responses `usage` object (as found on response.completed / JSON bodies): counts
 * are non-negative integers (floored), unreadable or missing ones 0, a non-object is emptyUsage.
 */
export const fromResponsesUsage = (u: unknown): TokenUsage => Result.getOrElse(decodeResponsesUsage(u), () => emptyUsage)

// ---------------------------------------------------------------------------------------------
// Any JSON answer
// ---------------------------------------------------------------------------------------------

const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

/**
 * An upstream's JSON answer as an object, or why it is not one (for a typed upstream failure
 * rather than a defect): not JSON at all (empty, cut off, HTML...), or JSON but not an object.
 */
export const parseUpstreamJson = (text: string): Result.Result<Record<string, unknown>, string> => {
  if (text.trim() === "") return Result.fail("Upstream answer was empty")
  const json = decodeJson(text)
  if (Result.isFailure(json)) return Result.fail("Upstream answer was not JSON")
  return Predicate.isObject(json.success) ? Result.succeed(json.success) : Result.fail("Upstream answer was not a JSON object")
}
