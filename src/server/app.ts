/**
 * The gateway as one platform HttpApp: the router, with what every request gets at its edges.
 * - an id (`x-request-id` on every answer, `request_id` on every log line of the request);
 * - the one mapping of failures to the error envelope: typed errors exhaustively (domain/envelope),
 *   the router's RouteNotFound as 404/405, defects as 500s that do not leak internals;
 * - one access-log line and one metric per request, once it is over: the status it was answered
 *   with, or 499 when the client left first (as nginx logs it), and the request's facts
 *   (observability/requestFacts.ts) the endpoint noted;
 * - the `x-ratelimit-*` headers of an admitted request, on whatever answer it gets.
 *
 * The request's Scope (the platform's, closed after the response is written) carries what a request
 * holds: slots, the upstream connection, the settlement that runs after the answer.
 */
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Clock, Context, Effect, FiberRef, HashMap, HashSet, Scope, type Tracer } from "effect"
import { envelopeBody, envelopeHeaders, envelopeOf, type Envelope, internalError, type RouteRefused } from "../domain/envelope.js"
import type { GatewayError } from "../domain/errors.js"
import { newRequestId } from "../domain/ids.js"
import { currentRequestId, pathOf } from "../endpoints/kit/request.js"
import { AccessLog } from "../observability/accessLog.js"
import { currentRequestFacts, newRequestFacts } from "../observability/requestFacts.js"
import { endRequestSpan, startRequestSpan } from "../observability/tracing.js"
import { recordRequest } from "../observability/metrics.js"
import { writeStallFiberId } from "./leanNodeServer.js"
import { type GatewayApp, makeResponsesWebSocket } from "../endpoints/responses/websocket/endpoint.js"
import { makeRouterWith, refusal, routeName } from "./router.js"

/** The route as a span names it: one name for the responses aliases, none for unknown paths. */
const routeTemplate = (path: string): string => {
  const name = routeName(path)
  return name === "responses" ? "/v1/responses" : name === "ui" ? "/ui" : name === "unknown" ? "unknown" : path
}

type Refused = GatewayError | RouteRefused | HttpServerError.RouteNotFound

const envelopeFor = (e: Refused, method: string, path: string): Envelope =>
  e._tag === "RouteRefused" ? e.envelope : e._tag === "RouteNotFound" ? refusal(method, path) : envelopeOf(e)

export const envelopeResponse = (e: Envelope) =>
  HttpServerResponse.text(JSON.stringify(envelopeBody(e)), {
    status: e.status,
    contentType: "application/json",
    headers: envelopeHeaders(e)
  })

export interface GatewayAppOptions {
  /** A span per request (and its steps) through the runtime's Tracer: observability/tracing.ts. */
  readonly tracing?: boolean
}

/**
 * The gateway app: every request answered (never a platform default), logged and counted. Build it
 * once; it needs nothing more from the context than the request and its Scope.
 */
export const makeGatewayAppWith = (options: GatewayAppOptions) => Effect.gen(function*() {
  // The WebSocket endpoint runs each turn through this very app, made below.
  let self: GatewayApp | undefined
  const responsesUpgrade = yield* makeResponsesWebSocket(() => self!)
  const router = yield* makeRouterWith({ responsesUpgrade })
  const accessLog = yield* AccessLog
  const tracing = options.tracing === true

  const app = Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest | Scope.Scope>(
    (fiber) => {
      const context = fiber.currentContext
      const request = Context.unsafeGet(context, HttpServerRequest.HttpServerRequest)
      const scope = Context.unsafeGet(context, Scope.Scope)
      const id = newRequestId()
      const started = Date.now()
      const path = pathOf(request.url)
      const facts = newRequestFacts()
      // The request is the root of a fiber of its own: set once, never restored (no one to restore for).
      const identified = Effect.zipRight(
        Effect.zipRight(FiberRef.set(currentRequestId, id), FiberRef.set(currentRequestFacts, facts)),
        FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set("request_id", id as unknown))
      )
      let status = 200
      let code = "ok"
      let answeredAt: number | undefined

      // Last to run when the request's scope closes: the response is out (or the client left), and
      // what the request held has been given back.
      // Whether the client left is read from the fiber, not the exit: the platform answers a
      // stream cut short with a success of its own.
      const logged = (span: Tracer.Span | undefined) => Scope.addFinalizer(scope,
        Effect.descriptorWith((fiber) => {
          if (HashSet.has(fiber.interruptors, writeStallFiberId)) {
            status = 499
            code = "client_write_timeout"
          } else if (HashSet.size(fiber.interruptors) > 0) {
            status = 499
            code = "client_closed_request"
          }
          recordRequest(routeName(path), status, code)
          const record = accessLog.record({
            requestId: id,
            method: request.method,
            path,
            status,
            code,
            durationMs: (answeredAt ?? Date.now()) - started,
            facts
          })
          if (span === undefined) return record
          return Effect.zipLeft(record, Effect.map(Clock.currentTimeNanos, (now) => endRequestSpan(span, facts, status, code, now)))
        }))

      const answered = (response: HttpServerResponse.HttpServerResponse) => {
        status = response.status
        // First to run when the scope closes (added last): the client's wait ends here, before the
        // settlement that follows the answer.
        const identifiedResponse = HttpServerResponse.setHeader(response, "x-request-id", id)
        return Effect.as(
          Scope.addFinalizer(scope, Effect.sync(() => void (answeredAt = Date.now()))),
          // Once a request is admitted under its per-minute limits, every answer says where they stand.
          facts.headers === undefined ? identifiedResponse : HttpServerResponse.setHeaders(identifiedResponse, facts.headers)
        )
      }

      const failed = (cause: Cause.Cause<Refused>) => {
        // The client went away: nobody to answer (an interrupted-only cause carries no failure).
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        const envelope = failure._tag === "Some" ? envelopeFor(failure.value, request.method, path) : internalError(id)
        code = envelope.code
        const response = answered(envelopeResponse(envelope))
        return failure._tag === "Some" ? response : Effect.zipRight(Effect.logError("unhandled defect", cause), response)
      }

      const served = Effect.matchCauseEffect(router, { onFailure: failed, onSuccess: answered })
      if (!tracing) return identified.pipe(Effect.zipRight(logged(undefined)), Effect.zipRight(served))
      return identified.pipe(
        Effect.zipRight(startRequestSpan(request, path, routeTemplate(path))),
        Effect.tap((span) => {
          facts.span = span
          return logged(span)
        }),
        Effect.flatMap((span) => Effect.withParentSpan(served, span))
      )
    }
  )
  self = app
  return app
})

/** The gateway app without spans (mount it under your own middleware: README "Composing"). */
export const makeGatewayApp = makeGatewayAppWith({})
