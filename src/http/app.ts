/**
 * The application around the router: a request id on every response, every failure mapped to the
 * envelope in one place (typed errors exhaustively, defects as 500s that do not leak internals),
 * one log line and one metric per request.
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { RouteNotFound } from "@effect/platform/HttpServerError"
import { Cause, Effect, Exit } from "effect"
import type { GatewayError } from "../domain/errors.js"
import { newRequestId } from "../domain/ids.js"
import { RequestId } from "./context.js"
import {
  type Envelope,
  envelopeOf,
  envelopeResponse,
  internalError,
  routeNotFound,
  type RouteRefused
} from "./envelope.js"
import { recordRequest } from "./metrics.js"
import { router } from "./routes.js"

const routeLabel = (path: string): string => {
  if (path.includes("/responses")) return "responses"
  if (path === "/v1/models" || path === "/antigravity/models") return "models"
  if (path === "/v1/usage") return "usage"
  if (path === "/health" || path === "/metrics") return path.slice(1)
  return "unknown"
}

/** The error channel the app may carry: adding an error the envelope does not know fails here. */
const toEnvelope = (e: GatewayError | RouteNotFound | RouteRefused, method: string, path: string): Envelope =>
  e._tag === "RouteNotFound" ? routeNotFound(method, path) : e._tag === "RouteRefused" ? e.envelope : envelopeOf(e)

const handle = (requestId: string) => Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = request.url.split("?")[0] ?? request.url
  const started = Date.now()
  const exit = yield* router.pipe(Effect.provideService(RequestId, requestId), Effect.exit)

  let response: HttpServerResponse.HttpServerResponse
  let code = "ok"
  if (Exit.isSuccess(exit)) {
    response = exit.value
  } else if (Cause.isInterruptedOnly(exit.cause)) {
    return yield* Effect.failCause(exit.cause) // the client went away; nobody to answer
  } else {
    const failure = Cause.failureOption(exit.cause)
    const envelope = failure._tag === "Some"
      ? toEnvelope(failure.value, request.method, path)
      : internalError(requestId)
    if (failure._tag === "None") yield* Effect.logError("unhandled defect", exit.cause)
    code = envelope.code
    response = envelopeResponse(envelope)
  }
  yield* recordRequest(routeLabel(path), response.status, code)
  yield* Effect.logInfo("request").pipe(
    Effect.annotateLogs({
      method: request.method,
      path,
      status: response.status,
      code,
      duration_ms: Date.now() - started
    })
  )
  return HttpServerResponse.setHeader(response, "x-request-id", requestId)
})

export const app = Effect.suspend(() => {
  const requestId = newRequestId()
  return Effect.annotateLogs(handle(requestId), "request_id", requestId)
})
