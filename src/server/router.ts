/**
 * The gateway's routes, as README lists them (docs/architecture.md follows a request through
 * them), on effect/http's HttpRouter, which alone dispatches. Each route is given with its facts as
 * data (its metric name, its span's template, its error shape: `RouteFacts`), which it tells the
 * gateway app's edge (src/server/app.ts, endpoints/kit/edge.ts) when it takes a request. Each
 * handler is an Effect over the HttpServerRequest, built once with its services resolved. Failures
 * are mapped to the envelope by the edge; a request no route took (the router's RouteNotFound) is
 * named by its path (`unmatched`), and `refusal` says which 404/405 it gets.
 */
import { Effect, Result, type Scope } from "effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerError from "effect/http/HttpServerError"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { type Envelope, envelopeOf, methodNotAllowed, RouteRefused, routeNotFound } from "../domain/envelope.js"
import type { GatewayError } from "../domain/errors.js"
import { makeModelsHandlers } from "../endpoints/models.js"
import { health, metrics, readyz } from "../endpoints/ops.js"
import { monitorEventLoop } from "../observability/processMetrics.js"
import { makeUsageHandler } from "../endpoints/usage.js"
import { makeResponsesHandler } from "../endpoints/responses/handler.js"
import { responsesSubpath } from "../endpoints/responses/subpath.js"
import { makeMessagesHandlers } from "../endpoints/messages/handler.js"
import { makeChatHandler } from "../endpoints/chat/handler.js"
import { asRoute, type DoorProgram, type Refused } from "../endpoints/kit/door.js"
import { edgeDoor, edgeRoute, type ErrorShape, type RouteFacts } from "../endpoints/kit/edge.js"
import { Settings } from "../config/AppConfig.js"
import { Readiness } from "../services/readiness/Readiness.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { uiHandler } from "../ui/assets.js"

/** The paths that serve the Responses API; each also serves its subpaths (`<path>/...`). */
export const RESPONSES_PATHS = ["/v1/responses", "/responses", "/backend-api/codex/responses"] as const

/** The label the request metrics carry: one per endpoint, not per path. */
export type RouteName = "responses" | "messages" | "chat" | "models" | "usage" | "health" | "readyz" | "metrics" | "ui" | "unknown"

const GET_ROUTES: ReadonlyArray<readonly [string, RouteName]> = [
  ["/v1/models", "models"],
  ["/antigravity/models", "models"],
  ["/v1/usage", "usage"],
  ["/health", "health"],
  ["/readyz", "readyz"],
  ["/metrics", "metrics"]
]
const getRoutes = new Map(GET_ROUTES)

const isResponsesPath = (path: string): boolean => {
  for (const p of RESPONSES_PATHS) {
    if (path === p || (path.startsWith(p) && path.charCodeAt(p.length) === 47 /* "/" */)) return true
  }
  return false
}

/** The Messages door's paths: `/v1/messages` and its `count_tokens`. */
export const MESSAGES_PATHS = ["/v1/messages", "/v1/messages/count_tokens"] as const

const isMessagesPath = (path: string): boolean => path === MESSAGES_PATHS[0] || path.startsWith("/v1/messages/")

/** The Chat Completions door's paths. */
export const CHAT_PATHS = ["/v1/chat/completions", "/chat/completions"] as const

/** Whether a path is one of the Messages door's routes (not merely under `/v1/messages/`). */
export const isMessagesRoute = (path: string): boolean => (MESSAGES_PATHS as ReadonlyArray<string>).includes(asMatched(path))

/**
 * A path as the router's matcher (FindMyWay, with effect's defaults) reads it: letter case, a
 * repeated slash and a trailing slash make no difference.
 */
const asMatched = (path: string): string => {
  let matched = path.toLowerCase()
  if (matched.includes("//")) matched = matched.replace(/\/{2,}/g, "/")
  return matched.length > 1 && matched.endsWith("/") ? matched.slice(0, -1) : matched
}

/** The route a path is served by, as the router matches it (`asMatched`). */
export const routeName = (raw: string): RouteName => {
  const path = asMatched(raw)
  return getRoutes.get(path) ??
    (path.startsWith("/v1/models/")
      ? "models"
      : isResponsesPath(path)
      ? "responses"
      : (CHAT_PATHS as ReadonlyArray<string>).includes(path)
      ? "chat"
      : isMessagesPath(path)
      ? "messages"
      : path === "/ui" || path.startsWith("/ui/")
      ? "ui"
      : "unknown")
}

/**
 * What a request no route took is told: 405 on a known path (with the method it takes), else 404;
 * a responses subpath that no route could match because it cannot be decoded (overlong UTF-8) is
 * the 400 invalid_path every unsafe subpath gets.
 */
export const refusal = (method: string, path: string): Envelope => {
  const name = routeName(path)
  if (name === "unknown") return routeNotFound(method, path)
  if (name === "responses") {
    const subpath = responsesSubpath(path)
    if (Result.isFailure(subpath)) return envelopeOf(subpath.failure)
  }
  if (name === "messages" && !isMessagesRoute(path)) return routeNotFound(method, path)
  // `/v1/models/{id}` takes one segment: a deeper path names no model.
  if (name === "models" && asMatched(path).split("/").length > 4) return routeNotFound(method, path)
  return methodNotAllowed(method, path, [name === "responses" || name === "messages" || name === "chat" ? "POST" : "GET"])
}

const websocketRefused = new RouteRefused({
  envelope: {
    status: 426,
    type: "invalid_request_error",
    code: "websocket_not_supported",
    message: "The Responses WebSocket transport is not available on this gateway; use HTTP POST",
    param: null,
    noRetry: true
  }
})

/**
 * GET on a responses path without the WebSocket endpoint (a router mounted on its own): an upgrade
 * is told at once to use HTTP (426); anything else is a 405.
 */
const upgradeAnswer: RouteHandler = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
  Effect.fail(
    request.headers["upgrade"]?.toLowerCase() === "websocket"
      ? websocketRefused
      : new RouteRefused({ envelope: methodNotAllowed(request.method, request.url.split("?")[0] ?? "", ["POST"]) })
  ))

/** A route's handler: an answer for the request, or a typed failure for the app to map. */
export type RouteHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError | RouteRefused,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/** The routes as one HttpEffect: their answer, their typed failure, or the router's RouteNotFound. */
export type GatewayRoutes = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError | RouteRefused | HttpServerError.HttpServerError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/** The doors: the routes that serve turns, each answering with its record of the request (kit/door.ts). */
export interface Doors {
  readonly responses: DoorProgram
  readonly messages: DoorProgram
  readonly countTokens: DoorProgram
  readonly chat: DoorProgram
  /** GET on the responses paths: the WebSocket transport (the gateway app provides it). */
  readonly responsesUpgrade?: DoorProgram | undefined
}

/** The doors, with their services resolved once. */
export const makeDoors = Effect.gen(function*() {
  const responses = yield* makeResponsesHandler
  const { countTokens, messages } = yield* makeMessagesHandlers
  const chat = yield* makeChatHandler
  const doors: Doors = { responses, messages, countTokens, chat }
  return doors
})

/** The routes' handlers, each given as a route of the router built with them. */
interface Wrap<E> {
  readonly route: (facts: RouteFacts, handler: RouteHandler) => Handler<E>
  readonly door: (facts: RouteFacts, program: DoorProgram) => Handler<E>
}

type Handler<E> = Effect.Effect<HttpServerResponse.HttpServerResponse, E, HttpServerRequest.HttpServerRequest | Scope.Scope>

const facts = (name: RouteName, template: string, shape: ErrorShape = "envelope", turn = false): RouteFacts => ({
  name,
  template,
  shape,
  turn
})

/** The routes, each handler given with its facts (its name, its span's template, its error shape). */
const makeRoutes = <E>(doors: Doors, wrap: Wrap<E>) => Effect.gen(function*() {
  const { antigravityModels, model, models } = yield* makeModelsHandlers
  const usage = yield* makeUsageHandler
  const scheduler = yield* Scheduler
  const settings = yield* Settings
  const readiness = yield* Readiness
  const get = (path: `/${string}`, name: RouteName, handler: RouteHandler, template: string = path) =>
    HttpRouter.route("GET", path, wrap.route(facts(name, template), handler))
  const responsesFacts = facts("responses", "/v1/responses", "envelope", true)
  const responses = wrap.door(responsesFacts, doors.responses)
  const upgradeFacts = facts("responses", "/v1/responses")
  const upgrade = doors.responsesUpgrade === undefined
    ? wrap.route(upgradeFacts, upgradeAnswer)
    : wrap.door(upgradeFacts, doors.responsesUpgrade)
  const routes: Array<HttpRouter.Route<E>> = [
    get("/v1/models", "models", models),
    get("/v1/models/:id", "models", model, "/v1/models/{id}"),
    get("/antigravity/models", "models", antigravityModels),
    get("/v1/usage", "usage", usage),
    get("/health", "health", health),
    get("/readyz", "readyz", readyz(readiness)),
    get("/metrics", "metrics", metrics(scheduler, settings.metricsToken, yield* monitorEventLoop)),
    // The dashboard's key-holder view (its operator view is on the admin listener); `/ui/*` also
    // takes `/ui`.
    get("/ui/*", "ui", uiHandler("key"), "/ui"),
    // Claude Code and the Anthropic SDK (`?beta=true` is a query: the path is the same).
    HttpRouter.route("POST", "/v1/messages", wrap.door(facts("messages", "/v1/messages", "anthropic", true), doors.messages)),
    HttpRouter.route(
      "POST",
      "/v1/messages/count_tokens",
      wrap.door(facts("messages", "/v1/messages/count_tokens", "anthropic"), doors.countTokens)
    )
  ]
  // The openai SDK, the AI SDK, LangChain; `/chat/completions` for clients given the bare host.
  const chat = wrap.door(facts("chat", "/v1/chat/completions", "envelope", true), doors.chat)
  for (const path of CHAT_PATHS) routes.push(HttpRouter.route("POST", path, chat))
  for (const path of RESPONSES_PATHS) {
    // `<path>/*` takes `<path>` itself too.
    routes.push(
      HttpRouter.route("POST", `${path}/*`, responses),
      HttpRouter.route("GET", `${path}/*`, upgrade)
    )
  }
  return routes
})

/**
 * The routes as the gateway app's edge serves them (src/server/app.ts): each tells the edge its
 * facts and, for a door, its record; the router's RouteNotFound is the edge's to map (`unmatched`).
 */
export const makeEdgeRoutes = Effect.fnUntraced(function*(doors: Doors, tracing: boolean) {
  const routes = yield* makeRoutes<GatewayError | RouteRefused | Refused>(doors, {
    route: (facts, handler) => edgeRoute(facts, handler, tracing),
    door: (facts, program) => edgeDoor(facts, program, tracing)
  })
  return yield* HttpRouter.toHttpEffect(HttpRouter.addAll(routes))
})

/** The facts of a request no route took, as its path reads: its 404/405 (`refusal`) is named so. */
export const unmatched = (path: string): RouteFacts => {
  const name = routeName(path)
  return facts(name, routeTemplate(path), name === "messages" ? "anthropic" : "envelope")
}

/** The route as a span names it: one name for the responses aliases, none for unknown paths. */
const routeTemplate = (path: string): string => {
  const name = routeName(path)
  return name === "responses"
    ? "/v1/responses"
    : name === "ui"
    ? "/ui"
    : name === "models" && asMatched(path).startsWith("/v1/models/")
    ? "/v1/models/{id}"
    : name === "unknown" || (name === "messages" && !isMessagesRoute(path))
    ? "unknown"
    : path
}

/**
 * The router on its own (no edge, no WebSocket transport: GET upgrades on the responses paths get
 * 426), with every handler's services resolved once, as an HttpEffect over the request. Its routes
 * live as long as the Scope it is built in. A door's route answers with the door's answer (and its
 * rate-limit headers), or fails with its error.
 */
export const makeRouter = Effect.gen(function*() {
  const routes = yield* makeRoutes<GatewayError | RouteRefused>(yield* makeDoors, {
    route: (_, handler) => handler,
    door: (_, program) => asRoute(program)
  })
  const app: GatewayRoutes = yield* HttpRouter.toHttpEffect(HttpRouter.addAll(routes))
  return app
})
