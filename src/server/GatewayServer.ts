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
 * Tracing spans are off unless asked for (`tracing: true`): the platform's tracer middleware costs
 * about 70 µs per request when on, and the gateway installs no tracer of its own.
 */
import type { Server } from "node:http"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Context, Effect, Layer } from "effect"
import { Lifecycle } from "../services/lifecycle/Lifecycle.js"
import { Settings } from "../config/AppConfig.js"
import { makeGatewayApp } from "./app.js"
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
  /** Spans for every request through the platform's tracer (default off). */
  readonly tracing?: boolean
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
      const serve = Layer.unwrapEffect(Effect.map(makeGatewayApp, (app) => HttpServer.serve(app)))
      const served = options.tracing === true ? serve : HttpMiddleware.withTracerDisabledWhen(serve, () => true)
      // The one choice of server: the platform's NodeHttpServer when spans are wanted (its tracer
      // middleware makes them), else the lean one (the same HttpServer contract, less per request).
      const listening = options.tracing === true
        ? NodeHttpServer.layer(() => server, { port: options.port, host: options.host })
        : LeanNodeServer.layer(() => server, { port: options.port, host: options.host, writeStallMillis: settings.streamWriteTimeoutMillis })
      return Layer.mergeAll(served, closing, Layer.effect(GatewayServer, addressOf)).pipe(Layer.provide(listening))
    }))

  /** PORT (default 8080), HOST (default 127.0.0.1) and TRACING (default false) from the environment. */
  static readonly layerConfig = Layer.unwrapEffect(
    Effect.map(
      Config.all({
        port: Config.port("PORT").pipe(Config.withDefault(8080)),
        host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
        tracing: Config.boolean("TRACING").pipe(Config.withDefault(false))
      }),
      GatewayServer.layer
    )
  )
}
