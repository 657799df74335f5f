/**
 * The admin API on a listener of its own (ADMIN_PORT, off unless set; ADMIN_HOST, default
 * 127.0.0.1), so it can stay on a private interface while the public API faces clients. Every
 * endpoint wants `Authorization: Bearer <ADMIN_TOKEN>`; without a token the listener refuses to
 * start. It serves the API, its OpenAPI document (/openapi.json), a docs page (/docs, docsPage.ts:
 * no CDN) and the dashboard's operator view (/ui). Each call is an `admin request` line of the
 * access log (callLog.ts). Not a hot path: it runs on the platform's NodeHttpServer.
 */
import { createServer } from "node:http"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { AdminNotFound, adminEnvelope } from "../domain/adminErrors.js"
import { envelopeBody } from "../domain/envelope.js"
import type { AccessLog } from "../observability/accessLog.js"
import type { Scheduler } from "../services/scheduler/Scheduler.js"
import { uiHandler } from "../ui/assets.js"
import type { Admin } from "./Admin.js"
import { adminCallLog } from "./callLog.js"
import { docsHtml, docsScript, openApiJson } from "./docsPage.js"
import { adminApiLayer } from "./handlers.js"
import type { AdminListen } from "./listen.js"

/**
 * Beside the API, without the token (they hold nothing secret; the dashboard's calls send one):
 * the OpenAPI document (every schema inline), the docs page and the dashboard's operator view.
 * And, below every other route, a path with no route: 404 route_not_found in the envelope.
 */
const pages = HttpRouter.use((router) =>
  Effect.all([
    router.add("GET", "/openapi.json", openApiJson),
    router.add("GET", "/docs", docsHtml),
    router.add("GET", "/docs/scalar.js", docsScript),
    router.add("GET", "/ui/*", uiHandler("admin")),
    router.add("*", "/*", (request) => {
      const envelope = adminEnvelope(
        new AdminNotFound({ message: `No route for ${request.method} ${request.url}`, code: "route_not_found" })
      )
      return Effect.succeed(HttpServerResponse.jsonUnsafe(envelopeBody(envelope), { status: envelope.status }))
    })
  ]))

const serveLayer = (options: AdminListen) =>
  HttpRouter.serve(Layer.mergeAll(adminApiLayer(options.token), pages, adminCallLog(options.token)), {
    disableLogger: true,
    disableListenLog: true
  }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host }))
  )

export class AdminServer extends Context.Service<AdminServer, { readonly url: string }>()("modelgate/AdminServer") {
  /** Listens until the layer's scope closes. */
  static readonly layer = (options: AdminListen): Layer.Layer<AdminServer, unknown, Admin | Scheduler | AccessLog> =>
    Layer.effect(
      AdminServer,
      Effect.gen(function*() {
        const context = yield* Layer.build(serveLayer(options))
        const server = Context.get(context, HttpServer.HttpServer)
        const url = HttpServer.formatAddress(server.address)
        yield* Effect.logInfo("admin API listening").pipe(Effect.annotateLogs({ address: url, docs: `${url}/docs` }))
        return { url }
      })
    )
}
