/**
 * The request's edge, as every transport serves it (the HTTP app, src/server/app.ts, and a
 * WebSocket turn, endpoints/responses/websocket/turn.ts): what a failure tells the client, in the
 * route's error shape, and a request opened here (`openRequest`) and ended here once it is over
 * (its 499 when the client left, its metric, its access-log line and its span), so that an HTTP
 * request and a WebSocket turn are logged and counted alike by construction; and the
 * wrappers a route is given to the router with (`edgeRoute`, `edgeDoor`), which tell the edge the
 * route's facts, start its span and hand over a door's record.
 */
import { Cause, type Clock, Context, Effect, Exit, Option, Scope, type Tracer } from "effect"
import type * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { anthropicErrorOf } from "../../domain/anthropicError.js"
import { type Envelope, envelopeBody, envelopeHeaders, envelopeOf, internalError, type RouteRefused } from "../../domain/envelope.js"
import type { GatewayError } from "../../domain/errors.js"
import type { AccessLogShape } from "../../observability/accessLog.js"
import { countRequest } from "../../observability/metrics.js"
import { endRequestSpan, startRequestSpan } from "../../observability/tracing.js"
import { type DoorProgram, type DoorRecord, factsOf, type Refused } from "./door.js"
import { currentRequestId, pathOf, requestContext } from "./request.js"

/** How a route's clients are told of a failure: our envelope, or Anthropic's shape (the Messages door). */
export type ErrorShape = "envelope" | "anthropic"

/** A failure as the client is told it, in our envelope. */
export const envelopeResponse = (e: Envelope) =>
  HttpServerResponse.text(JSON.stringify(envelopeBody(e)), {
    status: e.status,
    contentType: "application/json",
    headers: envelopeHeaders(e)
  })

/** A failure as the client is told it, in `shape`. */
export const errorResponse = (e: Envelope, shape: ErrorShape, requestId: string) => {
  if (shape === "envelope") return envelopeResponse(e)
  const { body, headers, status } = anthropicErrorOf(e, requestId)
  return HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json", headers })
}

/** What a failed request comes to: the envelope its client is told, and the door's record (if any). */
export interface Failure {
  readonly envelope: Envelope
  readonly record: DoorRecord | undefined
  /** No typed failure in the cause: a defect, told as a 500 that does not leak internals. */
  readonly defect: boolean
}

/** What a request's handler may fail with: a door's refusal, a route's typed error, the platform's own. */
export type EdgeError = Refused | GatewayError | RouteRefused | HttpServerError.HttpServerError

/**
 * The failure a cause means (never an interrupted-only cause: nobody is left to tell): a door's
 * refusal with its record, a route's typed error, or a defect. `platform` maps the platform's
 * errors (the router's RouteNotFound); undefined there is an internal error.
 */
export const failureOf = (
  cause: Cause.Cause<EdgeError>,
  requestId: string,
  platform: (e: HttpServerError.HttpServerError) => Envelope | undefined = () => undefined
): Failure => {
  const found = Cause.findErrorOption(cause)
  if (Option.isNone(found)) return { envelope: internalError(requestId), record: undefined, defect: true }
  const record = found.value._tag === "Refused" ? found.value.record : undefined
  const error = found.value._tag === "Refused" ? found.value.error : found.value
  const envelope = error._tag === "RouteRefused"
    ? error.envelope
    : error._tag === "HttpServerError"
    ? platform(error)
    : envelopeOf(error)
  return { envelope: envelope ?? internalError(requestId), record, defect: false }
}

/** A Scope's exit that says the request was interrupted: its client left (or the server cut it). */
export const interrupted = (exit: Exit.Exit<unknown, unknown>): boolean =>
  Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause)

/** A request that is over, as its line, metric and span tell it. */
export interface RequestEnd {
  readonly requestId: string
  readonly method: string
  readonly path: string
  /** The metric's route label: one per endpoint, not per path. */
  readonly route: string
  readonly status: number
  readonly code: string
  /** Read once the record's facts are in: a request that was never answered lasted until then. */
  readonly durationMs: () => number
  readonly record: DoorRecord | undefined
}

/**
 * Ends a request: its metric and access-log line, then its span (if traced), once what its record
 * came to is known (its settlement done).
 */
const endRequest = (
  accessLog: AccessLogShape,
  end: RequestEnd,
  span: Tracer.Span | undefined,
  endSpan: (span: Tracer.Span) => void = () => {}
): Effect.Effect<void> =>
  Effect.flatMap(end.record === undefined ? Effect.undefined : factsOf(end.record), (facts) => {
    const { code, method, path, requestId, status } = end
    const logged = Effect.andThen(
      countRequest(end.route, status, code),
      accessLog.record({ requestId, method, path, status, code, durationMs: end.durationMs(), facts })
    )
    if (span === undefined) return logged
    return Effect.tap(logged, Effect.clockWith((clock) =>
      Effect.sync(() => {
        endSpan(span)
        endRequestSpan(span, facts, status, code, clock.currentTimeNanosUnsafe())
      })
    ))
  })

/**
 * What a request's line will say, set while it runs: by the edge (the status it was answered with,
 * our error code, when the client's wait ended) and by the route that took it (its facts, its
 * span, a door's record: EdgeCell).
 */
export interface RequestState extends EdgeCell {
  status: number
  code: string
  /** When the client's wait ended (its answer out); until then the line's duration runs on. */
  answeredAt: number | undefined
}

/** A request as a transport starts it at the edge. */
export interface RequestStart {
  readonly requestId: string
  readonly method: string
  readonly path: string
  /** Epoch milliseconds on the request's Clock. */
  readonly started: number
  /** The metric's route label, read at the end (the route that took the request tells it late). */
  readonly route: (state: RequestState) => string
  /**
   * The transport's reading of how the request's Scope ended, before the edge's own rule (an
   * interruption is a client that left: 499 `client_closed_request`); true when it decided (a
   * write-stall cut, a WebSocket client that left after its answer).
   */
  readonly ending?: (exit: Exit.Exit<unknown, unknown>, state: RequestState) => boolean
}

/**
 * Opens a request at the edge, for HTTP and WebSocket turns alike: its line, metric and span are
 * ended once `scope` closes (the answer out or the client gone, what the request held given back,
 * its settlement done), from the state the request set meanwhile, which this returns.
 */
export const openRequest = (
  accessLog: AccessLogShape,
  scope: Scope.Scope,
  clock: Clock.Clock,
  start: RequestStart
): Effect.Effect<RequestState> => {
  const state: RequestState = { route: undefined, span: undefined, record: undefined, status: 200, code: "ok", answeredAt: undefined }
  const ended = Scope.addFinalizerExit(scope, (exit) =>
    Effect.suspend(() => {
      if (!(start.ending?.(exit, state) ?? false) && interrupted(exit)) {
        state.status = 499
        state.code = "client_closed_request"
      }
      const end: RequestEnd = {
        requestId: start.requestId,
        method: start.method,
        path: start.path,
        route: start.route(state),
        status: state.status,
        code: state.code,
        durationMs: () => (state.answeredAt ?? clock.currentTimeMillisUnsafe()) - start.started,
        record: state.record
      }
      return endRequest(accessLog, end, state.span)
    }))
  return Effect.as(ended, state)
}

/** A route's facts, given with the route: its metric label, its span's route, its error shape. */
export interface RouteFacts {
  /** The metric's label: one per endpoint, not per path. */
  readonly name: string
  /** The route as its span names it (`POST /v1/responses` for every alias and subpath). */
  readonly template: string
  readonly shape: ErrorShape
  /** A model turn (its span says so: a chat operation). */
  readonly turn: boolean
}

/**
 * What the edge learns of a request from the route that took it: the route's facts, its span (the
 * route starts it, named by its template), and a door's record (with its answer or its refusal).
 * Set by `edgeRoute` through the request's context; read when the answer is out and at the end.
 */
export interface EdgeCell {
  route: RouteFacts | undefined
  span: Tracer.Span | undefined
  record: DoorRecord | undefined
}

/** The request's cell, set by the edge (none under a router mounted on its own). */
export const currentEdgeCell: Context.Reference<EdgeCell | undefined> = Context.Reference<EdgeCell | undefined>(
  "modelgate/EdgeCell",
  { defaultValue: () => undefined }
)

/** A route's handler: its answer, or a typed failure for the edge to map. */
export type RouteHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError | RouteRefused,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/** A route as the edge serves it: its answer, or its failure (a door's refusal with its record). */
export type EdgeRoute = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError | RouteRefused | Refused,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/**
 * `served` with the route's facts told to the edge, in the route's span (tracing on). Outside the
 * edge (no cell: a router mounted on its own builds its routes without these) it is served as is.
 */
const withFacts = (facts: RouteFacts, tracing: boolean, served: (cell: EdgeCell) => EdgeRoute): EdgeRoute =>
  Effect.withFiber((fiber) => {
    const cell = fiber.getRef(currentEdgeCell) ?? { route: facts, span: undefined, record: undefined }
    cell.route = facts
    if (!tracing) return served(cell)
    const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
    return Effect.flatMap(startRequestSpan(request, pathOf(request.url), facts.template, facts.turn), (span) => {
      cell.span = span
      const withRequest = requestContext(fiber.getRef(currentRequestId), span)
      return Effect.updateContext(
        Effect.withParentSpan(served(cell), span),
        (context: Context.Context<HttpServerRequest.HttpServerRequest | Scope.Scope>) => withRequest(context)
      )
    })
  })

/** A plain route with its facts, for the edge. */
export const edgeRoute = (facts: RouteFacts, handler: RouteHandler, tracing: boolean): EdgeRoute =>
  withFacts(facts, tracing, () => handler)

/** A door as a route with its facts, for the edge: its record given to the edge with its answer or its refusal. */
export const edgeDoor = (facts: RouteFacts, program: DoorProgram, tracing: boolean): EdgeRoute =>
  withFacts(facts, tracing, (cell) =>
    Effect.matchEffect(program, {
      onFailure: (refused) => {
        cell.record = refused.record
        return Effect.fail(refused)
      },
      onSuccess: (served) => {
        cell.record = served.record
        return Effect.succeed(served.response)
      }
    }))
