/**
 * The gateway's routes, as README lists them (docs/architecture.md follows a request through
 * them), on effect/http's HttpRouter. Each handler is an Effect over the HttpServerRequest, built
 * once with its services resolved. Failures (the handlers' typed errors, and the router's own
 * RouteNotFound) are mapped to the envelope in one place, src/server/app.ts; `refusal` says there
 * which unknown-route answer a path gets.
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
import { asRoute, type DoorProgram } from "../endpoints/kit/door.js"
import { Settings } from "../config/AppConfig.js"
import { Readiness } from "../services/readiness/Readiness.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { uiHandler } from "../ui/assets.js"

/** The paths that serve the Responses API; each also serves its subpaths (`<path>/...`). */
export const RESPONSES_PATHS = ["/v1/responses", "/responses", "/backend-api/codex/responses"] as const

/** The label the request metrics carry: one per endpoint, not per path. */
export type RouteName = "responses" | "messages" | "models" | "usage" | "health" | "readyz" | "metrics" | "ui" | "unknown"

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
    (isResponsesPath(path)
      ? "responses"
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
  return methodNotAllowed(method, path, [name === "responses" || name === "messages" ? "POST" : "GET"])
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
  /** GET on the responses paths: the WebSocket transport (the gateway app provides it). */
  readonly responsesUpgrade?: DoorProgram | undefined
}

/** The doors, with their services resolved once. */
export const makeDoors = Effect.gen(function*() {
  const responses = yield* makeResponsesHandler
  const { countTokens, messages } = yield* makeMessagesHandlers
  const doors: Doors = { responses, messages, countTokens }
  return doors
})

/** Whether a path's percent-escapes decode (the router matches no path whose escapes do not). */
const decodes = (path: string): boolean => {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

/**
 * The door a request is for, if any: the one the router would route it to among `doors`
 * (test/server/doorDispatch.test.ts holds the two to agreeing).
 */
export const doorFor = (doors: Doors, method: string, raw: string): DoorProgram | undefined => {
  const path = asMatched(raw)
  if (method === "POST") {
    if (path === MESSAGES_PATHS[0]) return doors.messages
    if (path === MESSAGES_PATHS[1]) return doors.countTokens
    return isResponsesPath(path) && decodes(path) ? doors.responses : undefined
  }
  return method === "GET" && isResponsesPath(path) && decodes(path) ? doors.responsesUpgrade : undefined
}

export interface RouterOptions {
  /** The doors, when built already (the gateway app dispatches to them itself). */
  readonly doors?: Doors
}

/**
 * The router, with every handler's services resolved once, as an HttpEffect over the request. Its
 * routes live as long as the Scope it is built in. A door's route answers with the door's answer
 * (and its rate-limit headers), or fails with its error.
 */
export const makeRouterWith = (options: RouterOptions) => Effect.gen(function*() {
  const doors = options.doors ?? (yield* makeDoors)
  const responses = asRoute(doors.responses)
  const { antigravityModels, models } = yield* makeModelsHandlers
  const usage = yield* makeUsageHandler
  const scheduler = yield* Scheduler
  const settings = yield* Settings
  const readiness = yield* Readiness
  const upgrade = doors.responsesUpgrade === undefined ? upgradeAnswer : asRoute(doors.responsesUpgrade)
  const routes: Array<HttpRouter.Route<GatewayError | RouteRefused>> = [
    HttpRouter.route("GET", "/v1/models", models),
    HttpRouter.route("GET", "/antigravity/models", antigravityModels),
    HttpRouter.route("GET", "/v1/usage", usage),
    HttpRouter.route("GET", "/health", health),
    HttpRouter.route("GET", "/readyz", readyz(readiness)),
    HttpRouter.route("GET", "/metrics", metrics(scheduler, settings.metricsToken, yield* monitorEventLoop)),
    // The dashboard's key-holder view (its operator view is on the admin listener); `/ui/*` also
    // takes `/ui`.
    HttpRouter.route("GET", "/ui/*", uiHandler("key")),
    // Claude Code and the Anthropic SDK (`?beta=true` is a query: the path is the same).
    HttpRouter.route("POST", "/v1/messages", asRoute(doors.messages)),
    HttpRouter.route("POST", "/v1/messages/count_tokens", asRoute(doors.countTokens))
  ]
  for (const path of RESPONSES_PATHS) {
    // `<path>/*` takes `<path>` itself too.
    routes.push(
      HttpRouter.route("POST", `${path}/*`, responses),
      HttpRouter.route("GET", `${path}/*`, upgrade)
    )
  }
  const app: GatewayRoutes = yield* HttpRouter.toHttpEffect(HttpRouter.addAll(routes))
  return app
})

/** The router without the WebSocket transport (GET upgrades on the responses paths get 426). */
export const makeRouter = makeRouterWith({})
