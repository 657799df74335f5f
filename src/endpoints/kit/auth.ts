/**
 * Authentication: find the presented key (Authorization: Bearer, then x-api-key, then
 * x-goog-api-key), resolve it by hash, apply the key-status rules. Keys in the URL are refused so
 * they never end up in access logs.
 */
import { Clock, Effect, Option, Result } from "effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { sha256Hex } from "../../config/resolve.js"
import { InvalidRequest, PermissionDenied, type StoreError, Unauthenticated } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"
import type { KeyRepoShape } from "../../services/keyRepo/KeyRepo.js"
import type { Headers } from "./request.js"

export const presentedKey = (headers: Headers, url: string): Result.Result<string, InvalidRequest | Unauthenticated> => {
  const q = url.indexOf("?")
  if (q >= 0) {
    const params = new URLSearchParams(url.slice(q + 1))
    if ((params.get("key") ?? "") !== "" || (params.get("api_key") ?? "") !== "") {
      return Result.fail(
        new InvalidRequest({
          code: "api_key_in_query",
          message: "API keys are not accepted in the query string; send Authorization: Bearer <key>",
          param: null
        })
      )
    }
  }
  const authorization = headers["authorization"]
  if (authorization !== undefined) {
    const space = authorization.indexOf(" ")
    if (space > 0 && authorization.slice(0, space).toLowerCase() === "bearer") {
      const key = authorization.slice(space + 1).trim()
      if (key !== "") return Result.succeed(key)
    }
  }
  for (const header of ["x-api-key", "x-goog-api-key"]) {
    const key = headers[header]?.trim()
    if (key !== undefined && key !== "") return Result.succeed(key)
  }
  return Result.fail(
    new Unauthenticated({
      code: "missing_api_key",
      message: "API key is required in the Authorization header (Bearer scheme) or the x-api-key header"
    })
  )
}

export interface AuthOptions {
  /** /v1/usage lets expired keys in so they can read their own state; everything else refuses them. */
  readonly allowExpired: boolean
}

/** The key-status rules, once the key is found, at `nowMillis` (the Clock's). */
const admit = (
  found: Option.Option<Principal>,
  options: AuthOptions,
  nowMillis: number
): Effect.Effect<Principal, Unauthenticated | PermissionDenied> => {
  if (Option.isNone(found)) return Effect.fail(new Unauthenticated({ code: "invalid_api_key", message: "Invalid API key" }))
  const principal = found.value
  if (principal.key.status === "disabled") {
    return Effect.fail(new Unauthenticated({ code: "api_key_disabled", message: "API key is disabled" }))
  }
  if (principal.user.disabled === true) {
    return Effect.fail(new Unauthenticated({ code: "user_disabled", message: "The user this API key belongs to is disabled" }))
  }
  const expired = principal.key.status === "expired" ||
    (principal.key.expiresAt !== undefined && principal.key.expiresAt.getTime() <= nowMillis)
  if (expired && !options.allowExpired) {
    return Effect.fail(new PermissionDenied({ code: "api_key_expired", message: "API key has expired" }))
  }
  return Effect.succeed(principal)
}

/** Authenticates a request with a KeyRepo the endpoint resolved once, when the gateway was built. */
export const authenticate = (
  repo: KeyRepoShape,
  request: HttpServerRequest.HttpServerRequest,
  options: AuthOptions
): Effect.Effect<Principal, InvalidRequest | Unauthenticated | PermissionDenied | StoreError> => {
  const key = presentedKey(request.headers, request.url)
  if (Result.isFailure(key)) return Effect.fail(key.failure)
  // Expiry is read on the Clock (a test under TestClock can expire a key).
  return Effect.flatMap(
    repo.findByHash(sha256Hex(key.success)),
    (found) => Effect.flatMap(Clock.currentTimeMillis, (now) => admit(found, options, now))
  )
}
