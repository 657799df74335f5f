/**
 * The route table, exactly as DESIGN.md lists it. Wrong methods on known paths answer 405; a
 * WebSocket upgrade on a responses path answers 426 so clients fall back to HTTP at once.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { responsesHandler } from "../responses/handler.js"
import { methodNotAllowed, RouteRefused } from "./envelope.js"
import { prometheusText } from "./metrics.js"
import { antigravityModelsHandler, modelsHandler } from "./models.js"
import { usageHandler } from "./usage.js"

export const RESPONSES_PATHS = [
  "/v1/responses",
  "/v1/responses/*",
  "/responses",
  "/responses/*",
  "/backend-api/codex/responses",
  "/backend-api/codex/responses/*"
] as const

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const
type Method = typeof METHODS[number]

const notAllowed = (allowed: ReadonlyArray<string>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) =>
    new RouteRefused({ envelope: methodNotAllowed(req.method, req.url.split("?")[0] ?? req.url, allowed) }))

const upgradeRequired = Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) =>
  new RouteRefused({
    envelope: req.headers["upgrade"]?.toLowerCase() === "websocket"
      ? {
        status: 426,
        type: "invalid_request_error",
        code: "websocket_not_supported",
        message: "The Responses WebSocket transport is not available on this gateway; use HTTP POST",
        param: null,
        noRetry: true
      }
      : methodNotAllowed(req.method, req.url.split("?")[0] ?? req.url, ["POST"])
  }))

const [r1, r2, r3, r4, r5, r6] = RESPONSES_PATHS

const served = HttpRouter.empty.pipe(
  HttpRouter.post(r1, responsesHandler),
  HttpRouter.post(r2, responsesHandler),
  HttpRouter.post(r3, responsesHandler),
  HttpRouter.post(r4, responsesHandler),
  HttpRouter.post(r5, responsesHandler),
  HttpRouter.post(r6, responsesHandler),
  HttpRouter.get("/v1/models", modelsHandler),
  HttpRouter.get("/antigravity/models", antigravityModelsHandler),
  HttpRouter.get("/v1/usage", usageHandler),
  HttpRouter.get("/health", HttpServerResponse.unsafeJson({ status: "ok" })),
  HttpRouter.get(
    "/metrics",
    Effect.map(prometheusText, (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4" }))
  )
)

/** Every other method on a known path: 405 (GET on a responses path: 426 for WebSocket upgrades). */
const refused = (() => {
  let router: HttpRouter.HttpRouter<RouteRefused> = HttpRouter.empty
  const known: ReadonlyArray<readonly [string, ReadonlyArray<Method>]> = [
    ...RESPONSES_PATHS.map((p) => [p, ["POST"]] as const),
    ["/v1/models", ["GET"]],
    ["/antigravity/models", ["GET"]],
    ["/v1/usage", ["GET"]],
    ["/health", ["GET"]],
    ["/metrics", ["GET"]]
  ]
  for (const [path, allowed] of known) {
    for (const method of METHODS) {
      if (allowed.includes(method)) continue
      const handler = method === "GET" && path.includes("responses") ? upgradeRequired : notAllowed(allowed)
      router = HttpRouter.route(method)(path as HttpRouter.PathInput, handler)(router)
    }
  }
  return router
})()

export const router = HttpRouter.concat(served, refused)
