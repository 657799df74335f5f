/**
 * One access-log line per call to the admin listener (AccessLog's `admin request`, docs/admin.md
 * "Access log"): the route's template, the status and our error code, and who called. The token
 * is one shared secret that names nobody, so the actor is the one the audit trail records for the
 * API (`admin-api`) once the token was accepted, and `anonymous` otherwise (a refused token, or a
 * page that wants none); an operator may add a name of its own in `x-admin-actor`, logged beside
 * it as `operator`, sanitised, and never trusted: anyone holding the token can send any name.
 *
 * Calls refused before a handler runs are lines too: 401 from the token check, 400 from decoding,
 * 404 from a path with no route. Never the token or the Authorization header: the line has no
 * header but `x-admin-actor`, and a token typed into the path or that header is redacted.
 */
import { randomUUID } from "node:crypto"
import { Cause, Context, Effect, Exit, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { type AccessLogShape, AccessLog, recordAdminCall } from "../observability/accessLog.js"
import { Admin } from "./Admin.js"

/** Whether this call's token was the admin token: set by the token check (handlers.ts), read by the line. */
export interface AdminCaller {
  verified: boolean
}

export const currentAdminCaller: Context.Reference<AdminCaller | undefined> = Context.Reference<AdminCaller | undefined>(
  "modelgate/AdminCaller",
  { defaultValue: () => undefined }
)

/** Called by the token check when the token matched. */
export const markVerified: Effect.Effect<void> = currentAdminCaller.useSync((caller) => {
  if (caller !== undefined) caller.verified = true
})

const OPERATOR_MAX = 64

/**
 * `x-admin-actor` as a log value: what is not a letter, digit or `_.@-` becomes `_` (no control
 * characters, quotes or spaces to confuse a log reader), at most 64 characters; undefined when
 * nothing is left.
 */
export const sanitiseOperator = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const cleaned = header.trim().slice(0, OPERATOR_MAX * 4).replace(/[^A-Za-z0-9_.@-]+/g, "_").slice(0, OPERATOR_MAX)
  return /[A-Za-z0-9]/.test(cleaned) ? cleaned : undefined
}

const REDACTED = "[redacted]"

const withoutQuery = (url: string): string => {
  const q = url.search(/[?#]/)
  return q === -1 ? url : url.slice(0, q)
}

/** The envelope's `error.code` of an error answer; `error` when the body is not one. */
const codeOf = (response: HttpServerResponse.HttpServerResponse): string => {
  if (response.status < 400) return "ok"
  const body = response.body
  if (body._tag !== "Uint8Array") return "error"
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body.body))
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const error: unknown = parsed.error
      if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") return error.code
    }
  } catch {
    // not JSON
  }
  return "error"
}

const logCall = (log: AccessLogShape, actor: string, token: string) =>
(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>
) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const started = yield* Effect.clockWith((clock) => Effect.succeed(clock.currentTimeMillisUnsafe()))
    const requestId = randomUUID()
    const caller: AdminCaller = { verified: false }
    const rawPath = withoutQuery(request.url)
    const path = rawPath.includes(token) ? REDACTED : rawPath
    const claimed = sanitiseOperator(request.headers["x-admin-actor"])
    const operator = claimed !== undefined && claimed.includes(token) ? REDACTED : claimed
    const line = Effect.fnUntraced(function*(status: number, code: string) {
      // The router leaves the matched route in the fiber's context; none: refused before routing.
      const route = yield* Effect.serviceOption(HttpRouter.RouteContext)
      const ended = yield* Effect.clockWith((clock) => Effect.succeed(clock.currentTimeMillisUnsafe()))
      yield* recordAdminCall(log, {
        requestId,
        method: request.method,
        path,
        route: Option.match(route, { onNone: () => path, onSome: (r) => r.route.path }),
        status,
        code,
        durationMs: ended - started,
        actor: caller.verified ? actor : "anonymous",
        operator
      })
    })
    return yield* httpEffect.pipe(
      Effect.onExit((exit) =>
        Exit.isSuccess(exit)
          ? line(exit.value.status, codeOf(exit.value))
          : Cause.hasInterruptsOnly(exit.cause)
          ? line(499, "client_closed_request")
          : line(500, "internal_error")
      ),
      // Outside the line, which reads the route's context before this restores the one it had.
      Effect.provideService(currentAdminCaller, caller),
      Effect.map(HttpServerResponse.setHeader("x-request-id", requestId))
    )
  })

/** Every call to the admin listener logged through the AccessLog, answered with its `x-request-id`. */
export const adminCallLog = (token: Redacted.Redacted<string>) =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const log = yield* AccessLog
      const { actor } = yield* Admin
      return logCall(log, actor, Redacted.value(token))
    }),
    { global: true }
  )
