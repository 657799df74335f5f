/**
 * The HTTP server: node:http, with each request run as one fiber on the runtime the layer was
 * built in (the services are in its context already, nothing is provided per request). Measured
 * on this machine, @effect/platform's HttpServer with its router costs about 100 µs of CPU per
 * request before any handler runs; this costs about 5 µs over bare node:http (docs/performance.md).
 *
 * A client that goes away before its response is finished interrupts the request's fiber, which
 * releases what the request holds (slots, the upstream connection) and settles what it used. On
 * shutdown the server stops accepting, lets running requests finish until the drain deadline
 * (Lifecycle), and then cuts what is still open.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Config, Context, Effect, FiberId, Layer, Runtime } from "effect"
import { newRequestId } from "../domain/ids.js"
import { Lifecycle } from "../services/Lifecycle.js"
import { makeServeRequest } from "./app.js"
import type { ClientRequest, Headers } from "./request.js"

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
}

type AppContext = Effect.Effect.Context<ReturnType<Effect.Effect.Success<typeof makeServeRequest>>>

const clientGone = FiberId.make(-1, 0)

/**
 * After the drain deadline, how long streams get to flush their closing `response.failed` before
 * every connection still open is cut, so that nothing (a JSON answer still waiting on a slow
 * upstream) holds the shutdown up past DRAIN_SECONDS.
 */
const CUT_AFTER_DEADLINE_MILLIS = 1_000

const toClientRequest = (req: IncomingMessage): ClientRequest => {
  const url = req.url ?? "/"
  const q = url.indexOf("?")
  return {
    id: newRequestId(),
    method: req.method ?? "GET",
    url,
    path: q < 0 ? url : url.slice(0, q),
    headers: req.headers as Headers,
    body: req
  }
}

const listen = (server: Server, options: ListenOptions) =>
  Effect.async<void, Error>((resume) => {
    const onError = (e: Error) => resume(Effect.fail(e))
    server.once("error", onError)
    server.listen(options.port, options.host, () => {
      server.off("error", onError)
      resume(Effect.void)
    })
  })

/**
 * Stops accepting, lets running requests finish (streams end by the drain deadline, see
 * Lifecycle), and closes keep-alive connections as they fall idle.
 */
const close = (server: Server) =>
  Effect.async<void>((resume) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 50)
    server.close(() => {
      clearInterval(sweep)
      resume(Effect.void)
    })
    server.closeIdleConnections()
  })

const make = (options: ListenOptions) =>
  Effect.gen(function*() {
    const run = Runtime.runFork(yield* Effect.runtime<AppContext>())
    const serveRequest = yield* makeServeRequest
    const server = createServer((req, res: ServerResponse) => {
      const fiber = run(serveRequest(toClientRequest(req), res))
      res.once("close", () => {
        if (!res.writableFinished) fiber.unsafeInterruptAsFork(clientGone)
      })
    })
    // Watching the deadline is released after the server has closed (finalizers run last first).
    const lifecycle = yield* Lifecycle
    let cut: NodeJS.Timeout | undefined
    const stopWatching = lifecycle.onDrainDeadline(() => {
      cut = setTimeout(() => server.closeAllConnections(), CUT_AFTER_DEADLINE_MILLIS).unref()
    })
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopWatching()
        clearTimeout(cut)
      })
    )
    yield* Effect.acquireRelease(listen(server, options), () => close(server))
    const address = server.address() as AddressInfo
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address
    return { port: address.port, host: address.address, url: `http://${host}:${address.port}` }
  })

export class GatewayServer extends Context.Tag("modelgate/GatewayServer")<GatewayServer, GatewayServerShape>() {
  static readonly layer = (options: ListenOptions) => Layer.scoped(GatewayServer, make(options))

  /** PORT (default 8080) and HOST (default 127.0.0.1) from the environment. */
  static readonly layerConfig = Layer.unwrapEffect(
    Effect.map(
      Config.all({
        port: Config.port("PORT").pipe(Config.withDefault(8080)),
        host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
      }),
      GatewayServer.layer
    )
  )
}
