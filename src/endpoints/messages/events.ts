/**
 * The Messages door's own SSE frames: the `ping` it sends while a request waits, and the `error`
 * event that ends a stream which cannot finish (Anthropic's way: after the headers, a failure is
 * an event, never a status).
 */
import { encodeEvent } from "../../domain/sse.js"

export const PING_FRAME = encodeEvent({ type: "ping" })

/** Anthropic's error type for one of our failure codes once a stream has begun. */
const errorTypeOf = (code: string): string =>
  code === "server_shutting_down" || code === "upstream_overloaded" || code === "no_available_account"
    ? "overloaded_error"
    : code === "rate_limit_exceeded" || code === "upstream_rate_limited" || code === "concurrency_limit_exceeded"
    ? "rate_limit_error"
    : code === "insufficient_quota" || code === "insufficient_balance"
    ? "billing_error"
    : "api_error"

export const errorEvent = (code: string, message: string) => ({ type: "error", error: { type: errorTypeOf(code), message } }) as const

export const errorFrame = (code: string, message: string): string => encodeEvent(errorEvent(code, message))
