/**
 * The admin API on a listener of its own (ADMIN_PORT, off unless set; ADMIN_HOST, default
 * 127.0.0.1), so it can stay on a private interface while the public API faces clients. Every
 * endpoint wants `Authorization: Bearer <ADMIN_TOKEN>`; without a token the listener refuses to
 * start. It serves the API, its OpenAPI document (/openapi.json) and a docs page (/docs) with
 * the page's script inlined (no CDN). Not a hot path: it runs on the platform's NodeHttpServer.
 */
import { createServer } from "node:http"
import { HttpApiBuilder, HttpApiScalar, HttpServer, HttpServerResponse } from "@effect/platform"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import type { RouteNotFound } from "@effect/platform/HttpServerError"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Config, ConfigError, Context, Effect, Layer, Option, Redacted } from "effect"
import { AdminInvalid, AdminNotFound } from "../domain/adminErrors.js"
import { envelopeBody, internalError } from "../domain/envelope.js"
import type { Admin } from "./Admin.js"
import { AdminApi } from "./AdminApi.js"
import { adminApiLayer, adminAuthLayer } from "./handlers.js"

export interface AdminListen {
  readonly port: number
  readonly host: string
  readonly token: Redacted.Redacted<string>
}

/** Shorter tokens are refused: the admin token guards every user's keys and balances. */
export const MIN_TOKEN_LENGTH = 16

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

const serveLayer = (options: AdminListen) =>
  HttpApiBuilder.serve().pipe(
    Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(envelopeErrors),
    Layer.provide(adminApiLayer),
    Layer.provide(adminAuthLayer(options.token)),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host }))
  )

/**
 * ADMIN_PORT / ADMIN_HOST / ADMIN_TOKEN: None when ADMIN_PORT is unset; a failure saying what is
 * wrong when it is set without a usable ADMIN_TOKEN (the listener never starts unprotected).
 */
export const adminListenFromEnv: Effect.Effect<Option.Option<AdminListen>, ConfigError.ConfigError | Error> = Effect.gen(
  function*() {
    const port = yield* Config.option(Config.port("ADMIN_PORT"))
    if (Option.isNone(port)) return Option.none()
    const host = yield* Config.string("ADMIN_HOST").pipe(Config.withDefault("127.0.0.1"))
    const token = yield* Config.option(Config.redacted("ADMIN_TOKEN"))
    if (Option.isNone(token) || Redacted.value(token.value).trim() === "") {
      return yield* Effect.fail(new Error("ADMIN_PORT is set but ADMIN_TOKEN is not: the admin API does not start without a token"))
    }
    if (Redacted.value(token.value).length < MIN_TOKEN_LENGTH) {
      return yield* Effect.fail(new Error(`ADMIN_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`))
    }
    return Option.some({ port: port.value, host, token: token.value })
  }
)

export class AdminServer extends Context.Tag("modelgate/AdminServer")<AdminServer, { readonly url: string }>() {
  /** Listens until the layer's scope closes. */
  static readonly layer = (options: AdminListen): Layer.Layer<AdminServer, unknown, Admin> =>
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

  /** From the environment (`adminListenFromEnv`): nothing when ADMIN_PORT is unset. */
  static readonly layerConfig: Layer.Layer<never, unknown, Admin> = Layer.unwrapEffect(
    Effect.map(adminListenFromEnv, Option.match({
      onNone: () => Layer.empty,
      onSome: (listen) => Layer.discard(AdminServer.layer(listen))
    }))
  )
}
