/**
 * The route table, exactly as DESIGN.md lists it. A path is matched by a map lookup (the responses
 * aliases also by prefix, for subpaths such as `/compact`); no router library is needed for a
 * table this size. Wrong methods on known paths answer 405; a WebSocket upgrade on a responses path
 * answers 426 so clients fall back to HTTP at once.
 */
import { Effect } from "effect"
import type { GatewayError } from "../domain/errors.js"
import { makeResponsesHandler } from "../responses/handler.js"
import { methodNotAllowed, RouteRefused, routeNotFound } from "./envelope.js"
import { prometheusText } from "./metrics.js"
import { antigravityModelsHandler, modelsHandler } from "./models.js"
import { json, type Reply, text } from "./reply.js"
import type { ClientRequest } from "./request.js"
import { usageHandler } from "./usage.js"

/** The paths that serve the Responses API; each also serves its subpaths (`<path>/...`). */
export const RESPONSES_PATHS = ["/v1/responses", "/responses", "/backend-api/codex/responses"] as const

/** The label the request metrics carry: one per endpoint, not per path. */
export type RouteName = "responses" | "models" | "usage" | "health" | "metrics" | "unknown"

const health = () => Effect.succeed(json({ status: "ok" }))

const metrics = () => Effect.map(prometheusText, (body) => text(body, "text/plain; version=0.0.4"))

type ResponsesHandler = Effect.Effect.Success<typeof makeResponsesHandler>
type Handlers = ResponsesHandler | typeof modelsHandler | typeof antigravityModelsHandler | typeof usageHandler
/** What the handlers need between them: the services, the config, and the request's Scope. */
type HandlerContext = Effect.Effect.Context<ReturnType<Handlers>> | Effect.Effect.Context<typeof prometheusText>

export type Handler = (request: ClientRequest) => Effect.Effect<Reply, GatewayError | RouteRefused, HandlerContext>

interface Route {
  readonly name: RouteName
  readonly method: "GET" | "POST"
  readonly handle: Handler
}

const exact = new Map<string, Route>([
  ["/v1/models", { name: "models", method: "GET", handle: modelsHandler }],
  ["/antigravity/models", { name: "models", method: "GET", handle: antigravityModelsHandler }],
  ["/v1/usage", { name: "usage", method: "GET", handle: usageHandler }],
  ["/health", { name: "health", method: "GET", handle: health }],
  ["/metrics", { name: "metrics", method: "GET", handle: metrics }]
])

const RESPONSES: RouteName = "responses"

const isResponsesPath = (path: string): boolean => {
  for (const p of RESPONSES_PATHS) {
    if (path === p || (path.startsWith(p) && path.charCodeAt(p.length) === 47 /* "/" */)) return true
  }
  return false
}

export const routeName = (path: string): RouteName => exact.get(path)?.name ?? (isResponsesPath(path) ? RESPONSES : "unknown")

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

/** The handler for a request, or the refusal of it (404 unknown path, 405 wrong method, 426 WebSocket). */
/** The route table with the responses handler built (its services resolved once). */
export const makeDispatch: Effect.Effect<Handler, never, Effect.Effect.Context<typeof makeResponsesHandler>> = Effect.map(
  makeResponsesHandler,
  (responses) => {
    const responsesRoute: Route = { name: RESPONSES, method: "POST", handle: responses }
    const findRoute = (path: string): Route | undefined => exact.get(path) ?? (isResponsesPath(path) ? responsesRoute : undefined)
    return (request) => dispatch(findRoute(request.path), request)
  }
)

const dispatch = (route: Route | undefined, request: ClientRequest) => {
  if (route === undefined) {
    return Effect.fail(new RouteRefused({ envelope: routeNotFound(request.method, request.path) }))
  }
  if (request.method === route.method) return route.handle(request)
  if (route.name === "responses" && request.method === "GET" && request.headers["upgrade"]?.toLowerCase() === "websocket") {
    return Effect.fail(websocketRefused)
  }
  return Effect.fail(new RouteRefused({ envelope: methodNotAllowed(request.method, request.path, [route.method]) }))
}
