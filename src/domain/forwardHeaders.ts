/**
 * Which of a client's request headers reach the upstream: an allow-list, per upstream wire format.
 * Everything not named here is dropped (the client's credentials above all: the upstream gets the
 * account's). Pure: the client's headers in, the headers to add out, or undefined when there are
 * none, which is the common case and allocates nothing.
 *
 * - OpenAI Responses upstream (passthrough): `OpenAI-Beta`, as sent. The body goes through as the
 *   client wrote it, so whatever beta the client opted into is the upstream's to judge.
 * - Anthropic Messages upstream (translated): `anthropic-beta`, keeping only the beta names in
 *   `ANTHROPIC_BETAS`, the features the translation (src/translate) carries both ways; the others
 *   are dropped from the list, and the header with them when none is left.
 * - Never across: a client's `anthropic-beta` is not sent to an OpenAI upstream, nor `OpenAI-Beta`
 *   to an Anthropic one (neither means anything there).
 * - `OpenAI-Organization` / `OpenAI-Project` are the account's (config `openai_organization` /
 *   `openai_project`, see `openaiAccountHeaders`), never the client's.
 *
 * Values are forwarded only when they are printable ASCII (a header value undici would refuse
 * must not turn into an upstream failure that fails the account over) and not absurdly long.
 */
import type { Account } from "./model.js"

/** The headers a request adds to the account's own; the account's win on a clash. */
export type ForwardedHeaders = Readonly<Record<string, string>>

/** A request's headers as the server hands them over (lower-case names). */
export type ClientHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * The `anthropic-beta` names forwarded on the Messages path: features the translation supports,
 * that change nothing on the wire it does not already read and write.
 */
export const ANTHROPIC_BETAS: ReadonlySet<string> = new Set([
  // Thinking blocks between tool calls: the stream and history translation take thinking blocks
  // wherever they come, and replay them in order.
  "interleaved-thinking-2025-05-14",
  // Tool input streamed unbuffered: input_json_delta pieces are relayed as they come, and input
  // that is not valid JSON at the end is kept as text, never lost.
  "fine-grained-tool-streaming-2025-05-14",
  // Fewer output tokens for tool calls; the same tool_use blocks.
  "token-efficient-tools-2025-02-19",
  // Capacity only: a longer context window, longer output (max_output_tokens passes through).
  "context-1m-2025-08-07",
  "output-128k-2025-02-19",
  // text.format json_schema is translated to output_config.format.
  "structured-outputs-2025-11-13"
])

/** Longer than any real OpenAI-Beta list; a longer value is dropped, not cut. */
const MAX_VALUE_LENGTH = 1024

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/

/** The header's value (repeated headers joined, as Node joins them), trimmed; undefined when unusable. */
const valueOf = (headers: ClientHeaders, name: string): string | undefined => {
  const raw = headers[name]
  if (raw === undefined) return undefined
  const value = (typeof raw === "string" ? raw : raw.join(", ")).trim()
  return value !== "" && value.length <= MAX_VALUE_LENGTH && PRINTABLE_ASCII.test(value) ? value : undefined
}

/** What a request to an OpenAI Responses upstream carries of the client's headers. */
export const openaiForwardedHeaders = (headers: ClientHeaders): ForwardedHeaders | undefined => {
  const beta = valueOf(headers, "openai-beta")
  return beta === undefined ? undefined : { "openai-beta": beta }
}

/** What a request to an Anthropic Messages upstream carries of the client's headers. */
export const anthropicForwardedHeaders = (headers: ClientHeaders): ForwardedHeaders | undefined => {
  const value = valueOf(headers, "anthropic-beta")
  if (value === undefined) return undefined
  const kept: Array<string> = []
  for (const part of value.split(",")) {
    const name = part.trim().toLowerCase()
    if (ANTHROPIC_BETAS.has(name) && !kept.includes(name)) kept.push(name)
  }
  return kept.length === 0 ? undefined : { "anthropic-beta": kept.join(",") }
}

/**
 * The headers an OpenAI account sends with every request because its config says so
 * (`openai_organization`, `openai_project`); none for other platforms. Worked out once per account.
 */
export const openaiAccountHeaders = (account: Account): ForwardedHeaders => {
  if (account.platform !== "openai") return {}
  return {
    ...(account.openaiOrganization === undefined ? {} : { "openai-organization": account.openaiOrganization }),
    ...(account.openaiProject === undefined ? {} : { "openai-project": account.openaiProject })
  }
}

/**
 * What a Messages request to an Anthropic upstream (passthrough) carries of the client's headers:
 * `anthropic-version` and `anthropic-beta` as sent, as Anthropic's gateway guidance asks, and Claude
 * Code's session id (the provider reads it as the client sent it to them directly); the body is the
 * client's too, so whatever it opted into is the upstream's to judge.
 */
const PASSTHROUGH_HEADERS = ["anthropic-version", "anthropic-beta", "x-claude-code-session-id"] as const

export const anthropicPassthroughHeaders = (headers: ClientHeaders): ForwardedHeaders | undefined => {
  let forwarded: Record<string, string> | undefined
  for (const name of PASSTHROUGH_HEADERS) {
    const value = valueOf(headers, name)
    if (value !== undefined) (forwarded ??= {})[name] = value
  }
  return forwarded
}
