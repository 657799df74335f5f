/**
 * The server as a Layer: the gateway app served by @effect/platform's HttpServer, on Node's http
 * server through @effect/platform-node's NodeHttpServer. Each request is a fiber of its own; a
 * client that goes away before its response is finished interrupts it, which releases what the
 * request holds (slots, the upstream connection) and settles what it used.
 *
 * Shutdown: the server stops accepting, lets running requests finish until the drain deadline
 * (Lifecycle; streams then end with response.failed), closes keep-alive connections as they fall
 * idle, and a second after the deadline cuts whatever is still open, so that nothing (a JSON answer
 * still waiting on a slow upstream) holds the shutdown up past DRAIN_SECONDS.
 *
 * Tracing spans are off unless asked for (`tracing: true`); then the app makes them itself, one
 * per request for its whole life (observability/tracing.ts), through whatever Tracer the runtime
 * has. The platform's tracer middleware stays off on both servers: its span ends when the response
 * is handed over, before a stream is written or settled.
 */
import type { Server } from "node:http"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Context, Effect, Layer, Option } from "effect"
import { otlpFromEnv } from "../observability/tracing.js"
import { Lifecycle } from "../services/lifecycle/Lifecycle.js"
import { Settings } from "../config/AppConfig.js"
import { makeGatewayAppWith } from "./app.js"
import { makeNodeServer } from "./connections.js"
import * as LeanNodeServer from "./leanNodeServer.js"

export interface GatewayServerShape {
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number
  readonly host: string
  /** `http://host:port`, for banners and tests. */
  readonly url: string
}

export interface ListenOptions {
  readonly port: number
  readonly host: string
  /** A span for every request, through the runtime's Tracer (default off). */
  readonly tracing?: boolean
  /**
   * `lean` (default): src/server/leanNodeServer.ts; `platform`: @effect/platform-node's
   * NodeHttpServer (no write-stall timer of ours).
   */
  readonly server?: "lean" | "platform"
}

/** After the drain deadline, how long streams get to flush their closing frames before the cut. */
const CUT_AFTER_DEADLINE_MILLIS = 1_000

/** How often a closing server looks for keep-alive connections that fell idle. */
const IDLE_SWEEP_MILLIS = 50

/** Where the server listens, as the platform reports it. */
const addressOf = Effect.map(HttpServer.HttpServer, ({ address }): GatewayServerShape => {
  if (address._tag === "UnixAddress") return { port: 0, host: address.path, url: `http+unix://${address.path}` }
  const host = address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
  return { port: address.port, host: address.hostname, url: `http://${host}:${address.port}` }
})

/**
 * What the platform's Node server does not do on its own for a gateway carrying long streams: cut
 * connections past the drain deadline, and close keep-alive connections as they fall idle once the
 * server is closing. Its finalizers run after the server has closed.
 */
const shutdownHelpers = (server: Server) =>
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    let cut: NodeJS.Timeout | undefined
    let sweep: NodeJS.Timeout | undefined
    const stopWatching = lifecycle.onDrainDeadline(() => {
      cut = setTimeout(() => server.closeAllConnections(), CUT_AFTER_DEADLINE_MILLIS).unref()
    })
    server.once("close", () => clearInterval(sweep))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopWatching()
        clearTimeout(cut)
        clearInterval(sweep)
      })
    )
    /** Runs before the platform closes the server (it is released first). */
    const closing = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        server.closeIdleConnections()
        sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MILLIS)
      })
    ))
    return closing
  })

export class GatewayServer extends Context.Tag("modelgate/GatewayServer")<GatewayServer, GatewayServerShape>() {
  /** The gateway served on `options` (port 0: a free one; GatewayServer says which). */
  static readonly layer = (options: ListenOptions) =>
    Layer.unwrapScoped(Effect.gen(function*() {
      const settings = yield* Settings
      const server = makeNodeServer(settings)
      const closing = yield* shutdownHelpers(server)
      const app = makeGatewayAppWith({ tracing: options.tracing === true })
      const served = HttpMiddleware.withTracerDisabledWhen(
        Layer.unwrapEffect(Effect.map(app, (app) => HttpServer.serve(app))),
        () => true
      )
      // The one choice of server: the lean one (the platform's HttpServer contract, less per
      // request), or the platform's own NodeHttpServer when asked for.
      const listening = options.server === "platform"
        ? NodeHttpServer.layer(() => server, { port: options.port, host: options.host })
        : LeanNodeServer.layer(() => server, { port: options.port, host: options.host, writeStallMillis: settings.streamWriteTimeoutMillis, maxWebSocketMessageBytes: settings.maxBodyBytes })
      return Layer.mergeAll(served, closing, Layer.effect(GatewayServer, addressOf)).pipe(Layer.provide(listening))
    }))

  /**
   * PORT (default 8080), HOST (default 127.0.0.1) and tracing from the environment: on with
   * TRACING=true or an OTLP endpoint (observability/tracing.ts `otlpFromEnv`).
   */
  static readonly layerConfig = Layer.unwrapEffect(
    Effect.map(
      Effect.all({
        port: Config.port("PORT").pipe(Config.withDefault(8080)),
        host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
        tracing: Config.boolean("TRACING").pipe(Config.withDefault(false)),
        otlp: otlpFromEnv
      }),
      ({ host, otlp, port, tracing }) => GatewayServer.layer({ port, host, tracing: tracing || Option.isSome(otlp) })
    )
  )
}
