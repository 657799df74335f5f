/**
 * The error envelope in Anthropic's shape, for the Messages door: what the Anthropic SDK and Claude
 * Code read (`{"type":"error","error":{"type","message"},"request_id"}`), and the `error` event of a
 * stream that already started. Pure, like envelope.ts: the door writes the answer.
 *
 * The status decides the type (Anthropic's catalogue), except for "overloaded": our
 * `no_available_account` (every account of the group busy or cooling down) and `upstream_overloaded`
 * (the provider said 529) are what Anthropic calls 529 overloaded_error, the status its SDK raises as
 * OverloadedError and Claude Code waits out. Every other status is kept, so the SDK picks the same
 * error class and retry policy it would for ours (405 and 431 stay as they are; 408 and 504 become
 * timeout_error, the type Anthropic gives a timeout).
 *
 * Our code goes where Anthropic puts a code, `error.details.error_code` (the SDK reads it as
 * `APIError.errorCode` and treats a code it does not know as the bare type); nothing else is added.
 */
import { type Envelope, envelopeHeaders } from "./envelope.js"

export interface AnthropicErrorObject {
  readonly type: string
  readonly message: string
  readonly details: { readonly error_code: string }
}

export interface AnthropicErrorAnswer {
  readonly status: number
  readonly body: { readonly type: "error"; readonly error: AnthropicErrorObject; readonly request_id: string }
  readonly headers: Record<string, string>
}

const OVERLOADED_CODES: ReadonlySet<string> = new Set(["no_available_account", "upstream_overloaded"])
const OVERLOADED_STATUS = 529

const TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  408: "timeout_error",
  413: "request_too_large",
  429: "rate_limit_error",
  504: "timeout_error",
  529: "overloaded_error"
}

const statusOf = (envelope: Envelope): number =>
  OVERLOADED_CODES.has(envelope.code) ? OVERLOADED_STATUS : envelope.status

const typeOf = (status: number): string => TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error")

/**
 * A conversation past the model's context window is told in Anthropic's words ("prompt is too
 * long"), whoever said it upstream: Claude Code reads them to compact its conversation and retry.
 */
const messageOf = (envelope: Envelope): string =>
  envelope.code === "context_length_exceeded" && !/prompt is too long/i.test(envelope.message)
    ? `prompt is too long: ${envelope.message}`
    : envelope.message

const errorObject = (envelope: Envelope, status: number): AnthropicErrorObject => ({
  type: typeOf(status),
  message: messageOf(envelope),
  details: { error_code: envelope.code }
})

/**
 * The HTTP answer for an error: status, body and headers (`retry-after`, `x-should-retry`,
 * `x-ratelimit-*` as the envelope carries them, and `request-id`, which the SDK reads as
 * `APIError.requestID`).
 */
export const anthropicErrorOf = (envelope: Envelope, requestId: string): AnthropicErrorAnswer => {
  const status = statusOf(envelope)
  return {
    status,
    body: { type: "error", error: errorObject(envelope, status), request_id: requestId },
    headers: { ...envelopeHeaders(envelope), "request-id": requestId }
  }
}

/** The data of an `event: error` after a stream started (its status line is long sent). */
export const anthropicStreamError = (envelope: Envelope): { readonly type: "error"; readonly error: AnthropicErrorObject } => ({
  type: "error",
  error: errorObject(envelope, statusOf(envelope))
})
