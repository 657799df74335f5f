/**
 * The admin API on a listener of its own (ADMIN_PORT, off unless set; ADMIN_HOST, default
 * 127.0.0.1), so it can stay on a private interface while the public API faces clients. Every
 * endpoint wants `Authorization: Bearer <ADMIN_TOKEN>`; without a token the listener refuses to
 * start. It serves the API, its OpenAPI document (/openapi.json), a docs page (/docs, docsPage.ts:
 * no CDN) and the dashboard's operator view (/ui). Not a hot path: it runs on the platform's
 * NodeHttpServer.
 */
import { createServer } from "node:http"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import type { RouteNotFound } from "@effect/platform/HttpServerError"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Cause, Context, Effect, Layer, Option } from "effect"
import { AdminInvalid, AdminNotFound } from "../domain/adminErrors.js"
import { envelopeBody, internalError } from "../domain/envelope.js"
import type { Scheduler } from "../services/scheduler/Scheduler.js"
import type { Admin } from "./Admin.js"
import { AdminApi } from "./AdminApi.js"
import { uiHandler } from "../ui/assets.js"
import { docsHtml, docsScript } from "./docsPage.js"
import { adminApiLayer, adminAuthLayer } from "./handlers.js"
import type { AdminListen } from "./listen.js"

const isTagged = <T extends string>(e: unknown, tag: T): e is { readonly _tag: T } =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === tag

/**
 * Failures the platform raises before a handler runs (a body or query that does not decode, a
 * path with no route) become the admin errors, so they answer in the envelope like every other;
 * a defect answers 500 in the envelope, logged.
 */
const envelopeErrors = HttpApiBuilder.middleware(AdminApi, (app) =>
  Effect.catchAllCause(app, (cause): Effect.Effect<HttpServerResponse.HttpServerResponse, AdminInvalid | AdminNotFound> => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const e: unknown = failure.value
      if (isTagged(e, "HttpApiDecodeError")) return Effect.fail(invalidFrom(e as HttpApiDecodeError))
      if (isTagged(e, "RouteNotFound")) {
        const request = (e as RouteNotFound).request
        return Effect.fail(new AdminNotFound({ message: `No route for ${request.method} ${request.url}`, code: "route_not_found" }))
      }
      return Effect.failCause(cause)
    }
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
    const envelope = internalError("admin")
    return Effect.as(
      Effect.logError("admin API defect", cause),
      HttpServerResponse.unsafeJson(envelopeBody(envelope), { status: envelope.status })
    )
  })
)

/** A decoding failure as one line per issue, `field: what is wrong`, and the first field as `param`. */
const invalidFrom = (e: HttpApiDecodeError): AdminInvalid => {
  const path = (issue: HttpApiDecodeError["issues"][number]) => issue.path.map(String).join(".")
  const first = e.issues[0]
  return new AdminInvalid({
    message: e.issues.length === 0 ? e.message : e.issues.map((i) => `${path(i) === "" ? "" : `${path(i)}: `}${i.message}`).join("; "),
    code: "invalid_request",
    param: first === undefined || path(first) === "" ? null : path(first)
  })
}

/**
 * Beside the API, without the token (they hold nothing secret; the dashboard's calls send one):
 * the docs page and the dashboard's operator view.
 */
const pages = HttpApiBuilder.Router.use((router) =>
  Effect.all([
    router.get("/docs", docsHtml),
    router.get("/docs/scalar.js", docsScript),
    router.get("/ui", uiHandler("admin")),
    router.get("/ui/*", uiHandler("admin"))
  ])
)

const serveLayer = (options: AdminListen) =>
  HttpApiBuilder.serve().pipe(
    Layer.provide(pages),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(envelopeErrors),
    Layer.provide(adminApiLayer),
    Layer.provide(adminAuthLayer(options.token)),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host }))
  )

export class AdminServer extends Context.Tag("modelgate/AdminServer")<AdminServer, { readonly url: string }>() {
  /** Listens until the layer's scope closes. */
  static readonly layer = (options: AdminListen): Layer.Layer<AdminServer, unknown, Admin | Scheduler> =>
    Layer.scoped(
      AdminServer,
      Effect.gen(function*() {
        const context = yield* Layer.build(serveLayer(options))
        const server = Context.get(context, HttpServer.HttpServer)
        const url = server.address._tag === "TcpAddress"
          ? `http://${server.address.hostname}:${server.address.port}`
          : `unix://${server.address.path}`
        yield* Effect.logInfo("admin API listening").pipe(Effect.annotateLogs({ address: url, docs: `${url}/docs` }))
        return { url }
      })
    )
}
