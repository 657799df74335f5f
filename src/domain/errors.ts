/**
 * The gateway's typed errors: few, each carrying what the client envelope needs.
 * `src/domain/envelope.ts` maps them exhaustively; adding a class here without mapping it fails to compile.
 */
import { Effect, Schema } from "effect"

/** 400: the request is malformed or asks for something we do not support. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  code: Schema.String,
  message: Schema.String,
  param: Schema.NullOr(Schema.String).pipe(Schema.withConstructorDefault(Effect.succeed(null)))
}) {}

/** 413: the body exceeds the configured limit. */
export class RequestTooLarge extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
  limitBytes: Schema.Number
}) {
  override get message() {
    return `Request body too large, limit is ${this.limitBytes} bytes`
  }
}

/** 401: no key, unknown key, disabled key. */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  code: Schema.Literals(["missing_api_key", "invalid_api_key", "api_key_disabled", "user_disabled"]),
  message: Schema.String
}) {}

/** 403: the key or group is not permitted to do this (expired key, policy, subscription). */
export class PermissionDenied extends Schema.TaggedError<PermissionDenied>()("PermissionDenied", {
  code: Schema.String,
  message: Schema.String
}) {}

/** 404: the model is not offered to the key's group. */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", {
  model: Schema.String
}) {
  override get message() {
    return `The model '${this.model}' does not exist or is not available to this API key`
  }
}

/** 402: money ran out (key quota or user balance). */
export class InsufficientQuota extends Schema.TaggedError<InsufficientQuota>()("InsufficientQuota", {
  code: Schema.Literals(["key_quota_exhausted", "insufficient_balance"]),
  message: Schema.String
}) {}

/** 429: a limit that frees up with time (subscription windows, concurrency, requests / tokens per minute). */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  code: Schema.String,
  message: Schema.String,
  retryAfterSeconds: Schema.optional(Schema.Number),
  /** The `x-ratelimit-*` headers of a per-minute limit, so a client can pace itself. */
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String))
}) {}

/**
 * 503: no upstream account can take the request now; or, `noneConfigured`, the group has no
 * accounts at all: a configuration error no retry can mend.
 */
export class NoAvailableAccount extends Schema.TaggedError<NoAvailableAccount>()("NoAvailableAccount", {
  message: Schema.String,
  retryAfterSeconds: Schema.optional(Schema.Number),
  noneConfigured: Schema.optional(Schema.Boolean)
}) {}

/**
 * The upstream failed before anything reached the client (after failover, if any).
 * `status` is the upstream HTTP status (0 for transport failures).
 */
export class UpstreamFailed extends Schema.TaggedError<UpstreamFailed>()("UpstreamFailed", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  retryAfterSeconds: Schema.optional(Schema.Number)
}) {}

/**
 * Upstream statuses another account may not repeat (auth, billing, rate limits, timeouts, server
 * errors, transport failures as 0): worth failing over while nothing has reached the client.
 */
export const upstreamFailsOver = (status: number): boolean =>
  status === 0 || status === 401 || status === 402 || status === 403 || status === 408 || status === 429 ||
  status >= 500

/** Our code for an upstream that refused the account's credential (a 401, or a 403 whose body says so). */
export const UPSTREAM_AUTH_FAILED = "upstream_auth_failed"

/**
 * A 403 the upstream gave for what the request asked (a model or feature this credential may not
 * use), not for the credential itself: the client's to see, as a permission error, like our own 403s.
 */
export const upstreamDeniedRequest = (status: number, code: string): boolean =>
  status === 403 && code !== UPSTREAM_AUTH_FAILED

/** A 4xx that refuses the request itself: any account would answer the same, so the client hears it as is. */
export const upstreamRefusedRequest = (status: number): boolean =>
  status >= 400 && status < 500 && !upstreamFailsOver(status)

/** Infrastructure (database, cache) failed in a way the client cannot fix. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** A typed error a handler may fail with; the envelope maps each one. */
export type GatewayError =
  | InvalidRequest
  | RequestTooLarge
  | Unauthenticated
  | PermissionDenied
  | ModelNotFound
  | InsufficientQuota
  | RateLimited
  | NoAvailableAccount
  | UpstreamFailed
  | StoreError
