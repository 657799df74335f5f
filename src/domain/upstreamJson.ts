/**
 * The upstream JSON the gateway reads, decoded with Schema: an error body (OpenAI or Anthropic
 * shape), the Responses `usage` object, and a JSON answer as an object or a typed failure.
 * Pure and total: nothing here throws, whatever the upstream sent.
 */
import { Predicate, Result, Schema, SchemaTransformation } from "effect"
import { responsesToolCalls } from "./providerTools.js"
import { emptyUsage, type TokenUsage, withToolCalls } from "./usage.js"

// ---------------------------------------------------------------------------------------------
// Error bodies
// ---------------------------------------------------------------------------------------------

/**
 * A string field of an error body; absent, null or of another type reads as absent (the reader
 * below keeps strings only: a member of another type never fails the body).
 */
const ErrorText = Schema.optionalKey(Schema.Unknown)

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
    ...(typeof error.message === "string" ? { message: error.message } : {}),
    ...(typeof error.code === "string" ? { code: error.code } : {}),
    ...(typeof error.type === "string" ? { type: error.type } : {})
  }
}

// ---------------------------------------------------------------------------------------------
// Usage
// ---------------------------------------------------------------------------------------------

/** A token count as billed: a finite positive number, floored; anything else is 0. */
const tokenCount = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0)

/** A details object's field; a details value that is not an object counts as empty (all zeros). */
const detail = (details: unknown, field: string): number =>
  Predicate.isObject(details) ? tokenCount(details[field]) : 0

/**
 * The `usage` object as sent: each member read by the one transformation below (a missing or
 * unreadable count is 0). Declared as `Unknown` members rather than a count schema per member with
 * a decoding fallback: Schema 4 runs a fallback (catchDecoding) as an Effect per member, which
 * measured 13 µs per usage object against 4.5 µs this way (same loaded machine), and this runs once per request.
 */
const ResponsesUsageWire = Schema.Struct({
  input_tokens: Schema.optionalKey(Schema.Unknown),
  output_tokens: Schema.optionalKey(Schema.Unknown),
  input_tokens_details: Schema.optionalKey(Schema.Unknown),
  output_tokens_details: Schema.optionalKey(Schema.Unknown)
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
    inputTokens: tokenCount(u.input_tokens),
    outputTokens: tokenCount(u.output_tokens),
    cacheReadTokens: detail(u.input_tokens_details, "cached_tokens"),
    cacheCreationTokens: detail(u.input_tokens_details, "cache_write_tokens"),
    reasoningTokens: detail(u.output_tokens_details, "reasoning_tokens")
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

/**
 * What a Responses answer (a JSON body, the response of `response.completed`) used: its `usage`,
 * and the provider tool calls among its `output` items (`web_search_call` ...), which the upstream
 * bills per call and `usage` does not count.
 */
export const fromResponsesAnswer = (response: Record<string, unknown>): TokenUsage =>
  withToolCalls(fromResponsesUsage(response["usage"]), responsesToolCalls(response["output"]))

// ---------------------------------------------------------------------------------------------
// Any JSON answer
// ---------------------------------------------------------------------------------------------

/**
 * JSON.parse, as a Result. Not `Schema.fromJsonString(Schema.Unknown)`: its parse runs as an Effect
 * (a SchemaGetter transformation) on every JSON answer, for a value no schema then checks.
 */
const decodeJson = (text: string): Result.Result<unknown, undefined> => {
  try {
    return Result.succeed(JSON.parse(text) as unknown)
  } catch {
    return Result.fail(undefined)
  }
}

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
