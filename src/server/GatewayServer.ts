/**
 * The server as a Layer: the gateway app served by effect/http's HttpServer on Node's http server
 * through @effect/platform-node's NodeHttpServer. Each request is a fiber of its own; a client that
 * goes away before its response is finished interrupts it, which releases what the request holds
 * (slots, the upstream connection) and settles what it used.
 *
 * What the stock server is given for a gateway carrying long streams: the node:http server of
 * ./connections.ts (header and body timeouts, the connection cap, parser errors in the envelope,
 * idle keep-alive connections closed once it closes), WebSocket options (the largest message is
 * MAX_BODY_BYTES, no compression, no subprotocol), and the write-stall cut in the app
 * (./writeStall.ts).
 *
 * Shutdown: the server stops accepting, lets running requests finish until the drain deadline
 * (Lifecycle; a stream still running then ends in its door's words: `response.failed` on the
 * Responses doors, an `error` event on the Messages door; a WebSocket connection closes with 1001
 * once its turn has ended), and a second after the deadline cuts whatever is still open, so that
 * nothing (a JSON answer still waiting on a slow upstream) holds the shutdown up past DRAIN_SECONDS.
 *
 * Memory: once no request has been served for 30 s, one memory-reducing collection gives back the
 * heap the traffic before grew (./idleMemory.ts).
 *
 * Tracing spans are off unless asked for (`tracing: true`; `layerConfig`: TRACING=true or an OTLP
 * endpoint); then the app makes them itself, one per request or WebSocket turn for its whole life
 * (observability/tracing.ts), through whatever Tracer the runtime has. The platform's own request
 * spans stay off: theirs end when the response is handed over, before a stream is written or settled.
 */
import type { AddressInfo } from "node:net"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Config, Context, Effect, Layer, Option } from "effect"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpServer from "effect/http/HttpServer"
import { Settings } from "../config/AppConfig.js"
import { otlpFromEnv } from "../observability/tracing.js"
import { Lifecycle } from "../services/lifecycle/Lifecycle.js"
import { makeGatewayAppWith } from "./app.js"
import { makeNodeServer } from "./connections.js"
import { releaseMemoryWhenIdle } from "./idleMemory.js"

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
}

/** After the drain deadline, how long streams get to flush their closing frames before the cut. */
const CUT_AFTER_DEADLINE_MILLIS = 1_000

const addressOf = (address: AddressInfo | string | null): GatewayServerShape => {
  if (address === null || typeof address === "string") {
    const path = address ?? ""
    return { port: 0, host: path, url: `http+unix://${path}` }
  }
  const host = address.address.includes(":") ? `[${address.address}]` : address.address
  return { port: address.port, host: address.address, url: `http://${host}:${address.port}` }
}

export class GatewayServer extends Context.Service<GatewayServer, GatewayServerShape>()("modelgate/GatewayServer") {
  /** The gateway served on `options` (port 0: a free one; GatewayServer says which). */
  static readonly layer = (options: ListenOptions) =>
    Layer.unwrap(Effect.gen(function*() {
      const settings = yield* Settings
      const lifecycle = yield* Lifecycle
      const server = makeNodeServer(settings)
      // Past the drain deadline, whatever is still open is cut (a second later), so the server's
      // close, which waits for every connection, ends. Not a fiber of the layer's: it must outlive
      // the layer's release, during which the server closes.
      const cutter = yield* Effect.forkDetach(Effect.andThen(
        lifecycle.drainDeadline,
        Effect.callback<void>((resume) => {
          const timer = setTimeout(() => {
            server.closeAllConnections()
            resume(Effect.void)
          }, CUT_AFTER_DEADLINE_MILLIS)
          timer.unref()
          return Effect.sync(() => clearTimeout(timer))
        })
      ))
      server.once("close", () => cutter.interruptUnsafe())
      // The heap a burst grew goes back once the gateway is quiet (./idleMemory.ts).
      yield* releaseMemoryWhenIdle(server)
      const listening = NodeHttpServer.layer(() => server, {
        port: options.port,
        host: options.host,
        // Running requests get until the drain deadline and the cut after it.
        gracefulShutdownTimeout: settings.drainSeconds * 1_000 + CUT_AFTER_DEADLINE_MILLIS + 1_000,
        websocket: { maxPayload: settings.maxBodyBytes, perMessageDeflate: false, handleProtocols: () => false }
      })
      const served = Layer.unwrap(Effect.map(makeGatewayAppWith({ tracing: options.tracing === true }), (app) => HttpServer.serve(app))).pipe(
        Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true))
      )
      const address = Layer.sync(GatewayServer)(() => addressOf(server.address()))
      return Layer.merge(served, address).pipe(Layer.provide(listening))
    }))

  /**
   * PORT (default 8080), HOST (default 127.0.0.1) and tracing from the environment: on with
   * TRACING=true or an OTLP endpoint (observability/tracing.ts `otlpFromEnv`).
   */
  static readonly layerConfig = Layer.unwrap(
    Effect.gen(function*() {
      const port = yield* Config.Port("PORT").pipe(Config.withDefault(8080))
      const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
      const tracing = yield* Config.Boolean("TRACING").pipe(Config.withDefault(false))
      const otlp = yield* otlpFromEnv
      return GatewayServer.layer({ port, host, tracing: tracing || Option.isSome(otlp) })
    })
  )
}
