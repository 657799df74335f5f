/**
 * The gateway as one HttpEffect (effect/http): the router, which alone dispatches, inside the edge
 * every request gets (its shared parts, also a WebSocket turn's, in endpoints/kit/edge.ts).
 * - an id (`x-request-id` on every answer, `request_id` on every log line of the request);
 * - each route given with its facts (name, span template, error shape: ./router.ts), which it tells
 *   the edge when it takes the request, with a door's record of the request (endpoints/kit/door.ts);
 *   a request no route took is named by its path (`unmatched`);
 * - the one mapping of failures to the error envelope (or Anthropic's shape, per route): typed
 *   errors exhaustively (domain/envelope), the router's RouteNotFound as 404/405, defects as 500s
 *   that do not leak internals;
 * - one access-log line and one metric per request, once it is over: the status it was answered
 *   with, or 499 when the client left first (as nginx logs it), and what the door's record came to
 *   (observability/requestFacts.ts);
 * - the `x-ratelimit-*` headers of an admitted request, on whatever answer it gets;
 * - the write-stall cut of a streamed answer (STREAM_WRITE_TIMEOUT_MS, ./writeStall.ts).
 *
 * The request's Scope (the platform's, closed after the response is written) carries what a request
 * holds: slots, the upstream connection, the settlement that runs after the answer.
 */
import { Cause, Clock, Context, Effect, Layer, Scope } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../config/AppConfig.js"
import { newRequestId } from "../domain/ids.js"
import { recordHeaders } from "../endpoints/kit/door.js"
import { currentEdgeCell, type EdgeError, errorResponse, failureOf, interrupted, openRequest } from "../endpoints/kit/edge.js"
import { pathOf, requestContext } from "../endpoints/kit/request.js"
import { makeResponsesWebSocket } from "../endpoints/responses/websocket/endpoint.js"
import { AccessLog } from "../observability/accessLog.js"
import { Lifecycle } from "../services/lifecycle/Lifecycle.js"
import { startRequestSpan } from "../observability/tracing.js"
import { makeDoors, makeEdgeRoutes, refusal, unmatched } from "./router.js"
import { watchWriteStall } from "./writeStall.js"

export { envelopeResponse } from "../endpoints/kit/edge.js"

export interface GatewayAppOptions {
  /** A span per request (and its steps) through the runtime's Tracer: observability/tracing.ts. */
  readonly tracing?: boolean
}

/** The gateway as an HttpEffect: every request answered, its failures mapped to the envelope. */
export type GatewayApp = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  never,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/**
 * The gateway app: every request answered (never a platform default), logged and counted. Build it
 * once (in a Scope: its routes live as long); it needs nothing more from the context than the
 * request and its Scope.
 */
export const makeGatewayAppWith = Effect.fnUntraced(function*(options: GatewayAppOptions) {
  const tracing = options.tracing === true
  const upgrade = yield* makeResponsesWebSocket({ tracing })
  // The platform serves a request uninterruptibly and its router makes a route's handler
  // interruptible (a client that leaves interrupts it); the edge's own steps run around it.
  const router = yield* makeEdgeRoutes({ ...(yield* makeDoors), responsesUpgrade: upgrade }, tracing)
  const accessLog = yield* AccessLog
  const lifecycle = yield* Lifecycle
  const stallMillis = (yield* Settings).streamWriteTimeoutMillis

  const app: GatewayApp = Effect.withFiber((fiber) => {
    const context = fiber.context
    const request = Context.getUnsafe(context, HttpServerRequest.HttpServerRequest)
    const scope = Context.getUnsafe(context, Scope.Scope)
    const clock = fiber.getRef(Clock.Clock)
    const id = newRequestId()
    const path = pathOf(request.url)
    let stalled = false
    let cutByDrain = false

    // Last to run when the request's scope closes (added first): the request's line, metric and
    // span. An interruption is a client that went away, or one cut for not reading.
    return Effect.flatMap(openRequest(accessLog, scope, clock, {
      requestId: id,
      method: request.method,
      path,
      started: clock.currentTimeMillisUnsafe(),
      route: (state) => (state.route ?? unmatched(path)).name,
      ending: (exit, state) => {
        if (stalled) {
          state.status = 499
          state.code = "client_write_timeout"
          return true
        }
        if (interrupted(exit)) return false
        if (cutByDrain && state.code === "ok") state.code = "server_shutting_down"
        return true
      }
    }), (state) => {
      const answered = (response: HttpServerResponse.HttpServerResponse) => {
        state.status = response.status
        const withId = HttpServerResponse.setHeader(response, "x-request-id", id)
        // The Messages door's clients read Anthropic's `request-id` on every answer, 200s included
        // (the SDK's `_request_id`), as Anthropic sends it.
        const identified = (state.route ?? unmatched(path)).shape === "anthropic"
          ? HttpServerResponse.setHeader(withId, "request-id", id)
          : withId
        // Once a request is admitted under its per-minute limits, every answer says where they stand.
        const headers = recordHeaders(state.record)
        const answer = headers === undefined ? identified : HttpServerResponse.setHeaders(identified, headers)
        const streamed = answer.body._tag === "Stream"
        if (streamed) watchWriteStall(request, stallMillis, () => void (stalled = true))
        // First to run when the scope closes (added last): the client's wait ends here, before the
        // settlement that follows the answer. A stream still running at the drain deadline was cut by it.
        return Effect.as(
          Scope.addFinalizer(scope, Effect.sync(() => {
            state.answeredAt = clock.currentTimeMillisUnsafe()
            if (streamed && lifecycle.pastDrainDeadline()) {
              cutByDrain = true
              lifecycle.noteStreamCut()
            }
          })),
          answer
        )
      }

      const failed = (cause: Cause.Cause<EdgeError>) => {
        // The client went away: nobody to answer (an interrupted-only cause carries no failure).
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const failure = failureOf(cause, id, (e) => e.reason._tag === "RouteNotFound" ? refusal(request.method, path) : undefined)
        if (failure.record !== undefined) state.record = failure.record
        const { envelope } = failure
        state.code = envelope.code
        const route = state.route ?? unmatched(path)
        // Each door answers in its clients' shape: Anthropic's on the Messages door, ours elsewhere.
        const response = answered(errorResponse(envelope, route.shape, id))
        const told = envelope.status < 500 || !failure.defect && envelope.code !== "internal_error"
          ? response
          : Effect.andThen(Effect.logError("unhandled defect", cause), response)
        // A request no route took has its span here (a route starts its own).
        if (!tracing || state.route !== undefined) return told
        return Effect.flatMap(startRequestSpan(request, path, route.template, false), (span) => {
          state.span = span
          return told
        })
      }

      const served: GatewayApp = Effect.matchCauseEffect(router, { onFailure: failed, onSuccess: answered })
      const withRequest = requestContext(id, undefined)
      // The route that takes the request tells the edge its facts, span and record in `state`.
      return Effect.updateContext(
        served,
        (context: Context.Context<HttpServerRequest.HttpServerRequest | Scope.Scope>) =>
          Context.add(withRequest(context), currentEdgeCell, state)
      )
    })
  })
  return app
})

/** The gateway app without spans (mount it under your own middleware: README "Composing"). */
export const makeGatewayApp = makeGatewayAppWith({})

/**
 * The gateway app as a service, made once in the layer's Scope: what to take from a built context
 * to serve the app some other way than on a socket (layers.ts `gatewayWebHandler`).
 */
export class GatewayHttpApp extends Context.Service<GatewayHttpApp, GatewayApp>()("modelgate/GatewayHttpApp") {
  static readonly layer = (options: GatewayAppOptions = {}) => Layer.effect(GatewayHttpApp)(makeGatewayAppWith(options))
}
