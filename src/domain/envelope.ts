/**
 * The error catalogue: every failure a client can see, as the envelope's status, type and code.
 * `envelopes` has an entry per GatewayError tag, so a new error class that is not mapped here fails
 * to compile. Pure: the server turns an Envelope into a response (src/server/app.ts), a stream
 * into its closing `response.failed`.
 */
import { Data } from "effect"
import { type GatewayError, upstreamDeniedRequest, upstreamRefusedRequest } from "./errors.js"

export interface Envelope {
  readonly status: number
  readonly type: string
  readonly code: string
  readonly message: string
  readonly param: string | null
  readonly retryAfterSeconds?: number | undefined
  /** Sent as `x-should-retry: false` where a retry cannot help (the openai SDK honours it). */
  readonly noRetry?: boolean
  /** More headers the answer carries (the `x-ratelimit-*` of a refused rate limit). */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

/** Infrastructure failed: the one answer every StoreError gets (its details are logged, not sent). */
export const storeUnavailable: Envelope = {
  status: 503,
  type: "api_error",
  code: "store_unavailable",
  message: "The gateway's store is temporarily unavailable, please retry later",
  param: null,
  retryAfterSeconds: 1
}

type Mapping = { readonly [K in GatewayError["_tag"]]: (e: Extract<GatewayError, { _tag: K }>) => Envelope }

const envelopes: Mapping = {
  InvalidRequest: (e) => ({
    status: 400,
    type: "invalid_request_error",
    code: e.code,
    message: e.message,
    param: e.param,
    noRetry: true
  }),
  RequestTooLarge: (e) => ({
    status: 413,
    type: "invalid_request_error",
    code: "request_too_large",
    message: e.message,
    param: null,
    noRetry: true
  }),
  Unauthenticated: (e) => ({
    status: 401,
    type: "authentication_error",
    code: e.code,
    message: e.message,
    param: null,
    noRetry: true
  }),
  PermissionDenied: (e) => ({
    status: 403,
    type: "permission_error",
    code: e.code,
    message: e.message,
    param: null,
    noRetry: true
  }),
  ModelNotFound: (e) => ({
    status: 404,
    type: "invalid_request_error",
    code: "model_not_found",
    message: e.message,
    param: "model",
    noRetry: true
  }),
  InsufficientQuota: (e) => ({
    status: 402,
    type: "insufficient_quota",
    code: e.code,
    message: e.message,
    param: null,
    noRetry: true
  }),
  RateLimited: (e) => ({
    status: 429,
    type: "rate_limit_error",
    code: e.code,
    message: e.message,
    param: null,
    retryAfterSeconds: e.retryAfterSeconds,
    headers: e.headers
  }),
  NoAvailableAccount: (e) =>
    e.noneConfigured === true
      ? { status: 503, type: "api_error", code: "no_accounts_configured", message: e.message, param: null, noRetry: true }
      : {
        status: 503,
        type: "api_error",
        code: "no_available_account",
        message: e.message,
        param: null,
        retryAfterSeconds: e.retryAfterSeconds
      },
  UpstreamFailed: (e) =>
    // The upstream refused the request itself (400, 404, 413, 422...): its status and words are the
    // client's to see, and so is a 403 for what the request asked (not for the account's credential).
    // Anything else is the gateway's upstream failing: 502, or 429 for rate limits.
    upstreamRefusedRequest(e.status)
      ? { status: e.status, type: "invalid_request_error", code: e.code, message: e.message, param: null, noRetry: true }
      : upstreamDeniedRequest(e.status, e.code)
      ? { status: 403, type: "permission_error", code: e.code, message: e.message, param: null, noRetry: true }
      : {
        status: e.status === 429 ? 429 : 502,
        type: e.status === 429 ? "rate_limit_error" : "upstream_error",
        code: e.code,
        message: e.message,
        param: null,
        retryAfterSeconds: e.retryAfterSeconds
      },
  StoreError: () => storeUnavailable
}

export const envelopeOf = (e: GatewayError): Envelope => (envelopes[e._tag] as (e: GatewayError) => Envelope)(e)

export const routeNotFound = (method: string, path: string): Envelope => ({
  status: 404,
  type: "not_found_error",
  code: "route_not_found",
  message: `No route for ${method} ${path}`,
  param: null,
  noRetry: true
})

export const methodNotAllowed = (method: string, path: string, allowed: ReadonlyArray<string>): Envelope => ({
  status: 405,
  type: "invalid_request_error",
  code: "method_not_allowed",
  message: `Method ${method} is not allowed on ${path}; use ${allowed.join(" or ")}`,
  param: null,
  noRetry: true
})

/**
 * A request the router itself turns away (unknown path, wrong method, WebSocket upgrade). It travels
 * as a failure, not a ready response, so the app logs and counts it under its error code like every
 * other failure.
 */
export class RouteRefused extends Data.TaggedError("RouteRefused")<{ readonly envelope: Envelope }> {}

export const internalError = (requestId: string): Envelope => ({
  status: 500,
  type: "api_error",
  code: "internal_error",
  message: `Internal error; quote request id ${requestId} when reporting it`,
  param: null
})

export const envelopeBody = (e: Envelope) => ({ error: { type: e.type, message: e.message, code: e.code, param: e.param } })

/** The headers an envelope answer carries besides its body: `retry-after`, `x-should-retry`, `x-ratelimit-*`. */
export const envelopeHeaders = (e: Envelope): Record<string, string> => {
  const headers: Record<string, string> = e.headers === undefined ? {} : { ...e.headers }
  if (e.retryAfterSeconds !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(e.retryAfterSeconds)))
  if (e.noRetry) headers["x-should-retry"] = "false"
  return headers
}

