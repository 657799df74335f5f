/**
 * A lean implementation of @effect/platform's `HttpServer` on node:http: the same contract as
 * `NodeHttpServer` (it serves any platform `HttpApp`; requests are `HttpServerRequest`s, answers
 * `HttpServerResponse`s, each request a fiber with its Scope), with less done per request.
 *
 * Measured here, NodeHttpServer costs 50-70 µs of CPU per request over bare node:http before the
 * app runs, and writes a Stream body by running it with a Sink (~60 µs of setup per stream). This
 * one provides the request and its Scope in one context copy, writes a text body without waiting
 * for the socket's flush, and pulls a Stream body in the request's Scope (docs/performance.md).
 * What it leaves out: the platform's tracer middleware (the app makes its own spans) and the
 * platform services NodeHttpServer's layer also provides (FileSystem, Path, Etag), which the
 * gateway does not use. WebSocket upgrades are served as the platform's are (`request.upgrade`).
 *
 * Like NodeHttpServer: a client that goes away before its answer is complete interrupts the
 * request's fiber (as `HttpServerError.clientAbortFiberId`); the app runs uninterruptibly except
 * where it opts in (the router makes its handlers interruptible) and a Stream body's writing; the
 * request's Scope closes after the answer is written.
 */
import { type IncomingMessage, type Server, ServerResponse } from "node:http"
import type { AddressInfo, Socket as NetSocket } from "node:net"
import { type Duplex, Readable } from "node:stream"
import { WebSocketServer } from "ws"
import * as Cookies from "@effect/platform/Cookies"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Headers from "@effect/platform/Headers"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import type * as HttpMethod from "@effect/platform/HttpMethod"
import type * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Multipart from "@effect/platform/Multipart"
import type * as Path from "@effect/platform/Path"
import * as Socket from "@effect/platform/Socket"
import * as UrlParams from "@effect/platform/UrlParams"
import { NodeMultipart, NodeStream } from "@effect/platform-node"
import { Cause, Context, Effect, type Fiber, FiberId, FiberRef, Inspectable, Layer, Option, Runtime, Scope, Stream } from "effect"

const requestError = (request: HttpServerRequest.HttpServerRequest) => (cause: unknown) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause })

/** The platform's server request over Node's IncomingMessage; bodies are read on demand. */
class NodeRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  private textEffect: Effect.Effect<string, HttpServerError.RequestError> | undefined

  constructor(
    readonly source: IncomingMessage,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string,
    /** Set on a request that came as an HTTP upgrade: completes the WebSocket handshake. */
    private readonly upgradeEffect?: Effect.Effect<Socket.Socket, HttpServerError.RequestError>
  ) {
    super()
  }

  get originalUrl(): string {
    return this.source.url ?? "/"
  }
  get method(): HttpMethod.HttpMethod {
    return (this.source.method ?? "GET").toUpperCase() as HttpMethod.HttpMethod
  }
  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }
  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }
  get cookies(): Readonly<Record<string, string>> {
    return Cookies.parseHeader(this.headers["cookie"] ?? "")
  }

  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    // Read once and kept: a body can be read as text and then as JSON.
    this.textEffect ??= Effect.runSync(Effect.cached(Effect.flatMap(HttpIncomingMessage.MaxBodySize, (max) =>
      NodeStream.toString(() => this.source, { onFailure: requestError(this), maxBytes: Option.getOrUndefined(max) })
    )))
    return this.textEffect
  }
  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => (text === "" ? null : JSON.parse(text)) as unknown, catch: requestError(this) }))
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: requestError(this) }))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return Effect.map(
      Effect.flatMap(HttpIncomingMessage.MaxBodySize, (max) =>
        NodeStream.toUint8Array(() => this.source, { onFailure: requestError(this), maxBytes: Option.getOrUndefined(max) })),
      (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
    )
  }
  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return NodeStream.fromReadable(() => this.source, requestError(this))
  }
  get multipart(): Effect.Effect<Multipart.Persisted, Multipart.MultipartError, Scope.Scope | FileSystem.FileSystem | Path.Path> {
    return NodeMultipart.persisted(this.source, this.source.headers)
  }
  get multipartStream(): Stream.Stream<Multipart.Part, Multipart.MultipartError> {
    return NodeMultipart.stream(this.source, this.source.headers)
  }
  get upgrade(): Effect.Effect<Socket.Socket, HttpServerError.RequestError> {
    return this.upgradeEffect ??
      Effect.fail(new HttpServerError.RequestError({ request: this, reason: "Decode", description: "not an upgradeable request" }))
  }

  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }) {
    return new NodeRequest(
      this.source,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride,
      this.upgradeEffect
    )
  }

  toJSON(): unknown {
    return { _id: "@effect/platform/HttpServerRequest", method: this.method, url: this.originalUrl }
  }
}

const headersOf = (response: HttpServerResponse.HttpServerResponse): Record<string, string | Array<string>> => {
  if (Cookies.isEmpty(response.cookies)) return response.headers
  const headers: Record<string, string | Array<string>> = { ...response.headers }
  const cookies = Cookies.toSetCookieHeaders(response.cookies)
  const set = headers["set-cookie"]
  headers["set-cookie"] = set === undefined ? cookies : [...cookies, ...(Array.isArray(set) ? set : [set])]
  return headers
}

/** The fiber id a request is interrupted with when its client stopped reading (`writeStallMillis`). */
export const writeStallFiberId = FiberId.make(-2, 0)

export interface LeanServerOptions {
  readonly port: number
  readonly host: string
  /**
   * How long a Stream body may wait for a client that does not read (its socket full) before the
   * connection is cut and the request interrupted as `writeStallFiberId`; 0 waits for ever.
   */
  readonly writeStallMillis?: number
  /** The largest WebSocket message a client may send (the connection is closed with 1009 above it); 0: no limit. */
  readonly maxWebSocketMessageBytes?: number
}

/**
 * Waits until the socket wants more (a client reading slowly holds its own stream back); a client
 * that takes nothing for `stallMillis` is cut, and its request interrupted.
 */
const drained = (res: ServerResponse, stallMillis: number) =>
  Effect.withFiberRuntime<void>((fiber) =>
    Effect.async<void>((resume) => {
      const go = () => {
        clearTimeout(timer)
        resume(Effect.void)
      }
      const timer = stallMillis > 0
        ? setTimeout(() => {
          res.off("drain", go)
          fiber.unsafeInterruptAsFork(writeStallFiberId)
          res.destroy()
        }, stallMillis)
        : undefined
      res.once("drain", go)
      return Effect.sync(() => {
        clearTimeout(timer)
        res.off("drain", go)
      })
    })
  )

/**
 * A Stream body, pulled in the request's Scope: each Chunk is written as it comes, and the next
 * pulled once the socket has room. A failure ends the response where it stands (the gateway's
 * streams never fail: they close themselves with a terminal event).
 */
const writeStream = <E>(res: ServerResponse, stream: Stream.Stream<Uint8Array, E>, scope: Scope.Scope, stallMillis: number) =>
  Effect.flatMap(Scope.extend(Stream.toPull(stream), scope), (pull) => {
    const next: Effect.Effect<void, E> = Effect.matchCauseEffect(pull, {
      onFailure: (cause) => {
        const failure = Cause.failureOption(cause)
        if (failure._tag === "Some" && Option.isNone(failure.value)) return Effect.sync(() => void res.end())
        return Effect.failCause(Cause.map(cause, (e) => Option.getOrThrow(e)))
      },
      onSuccess: (chunk) => {
        let room = true
        for (const bytes of chunk) room = res.write(bytes)
        return room ? next : Effect.zipRight(drained(res, stallMillis), next)
      }
    })
    return next
  })

const write = (
  request: HttpServerRequest.HttpServerRequest,
  res: ServerResponse,
  response: HttpServerResponse.HttpServerResponse,
  scope: Scope.Scope,
  stallMillis: number
): Effect.Effect<void, unknown> => {
  if (res.writableEnded) return Effect.void
  res.writeHead(response.status, headersOf(response))
  const body = response.body
  if (request.method === "HEAD") return Effect.sync(() => void res.end())
  switch (body._tag) {
    case "Empty":
      return Effect.sync(() => void res.end())
    case "Uint8Array":
      return Effect.sync(() => void res.end(body.body))
    case "Raw":
      if (body.body instanceof Readable) {
        const readable = body.body
        return Effect.async<void, unknown>((resume) => {
          readable.once("error", (e: unknown) => resume(Effect.fail(e)))
          readable.pipe(res).once("finish", () => resume(Effect.void))
        })
      }
      return Effect.sync(() => void res.end(body.body as string | Uint8Array))
    case "FormData":
      return Effect.promise(async () => {
        const encoded = new Response(body.formData)
        res.end(Buffer.from(await encoded.arrayBuffer()))
      })
    case "Stream":
      return Effect.interruptible(writeStream(res, body.stream, scope, stallMillis))
  }
}

/** A response already begun cannot become an error answer: it ends where it is. */
const endAfterFailure = (res: ServerResponse, cause: Cause.Cause<unknown>) =>
  Effect.suspend(() => {
    if (!res.headersSent) res.writeHead(500)
    if (!res.writableEnded) res.end()
    return Effect.logError("the response could not be written", cause)
  })

/**
 * Serves one request: `app` with the request and a fresh Scope in its context, then its answer
 * (or the platform's answer for its failure) written, then the Scope closed with how it went.
 */
const handler = <E, R>(app: HttpApp.Default<E, R>, stallMillis: number) =>
  (request: NodeRequest, res: () => ServerResponse): Effect.Effect<void, never, Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Scope.make(), (scope) => {
        const answered = Effect.flatMap(
          Effect.catchAllCause(app, (cause) => Effect.flatMap(HttpServerError.causeResponse(cause), ([response]) => Effect.succeed(response))),
          (response) => write(request, res(), response, scope, stallMillis)
        ).pipe(Effect.catchAllCause((cause) => Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : endAfterFailure(res(), cause)))
        const inContext = FiberRef.update(FiberRef.currentContext, (context) => {
          const map = new Map(context.unsafeMap)
          map.set(HttpServerRequest.HttpServerRequest.key, request)
          map.set(Scope.Scope.key, scope)
          return Context.unsafeMake(map)
        })
        return Effect.onExit(
          restore(Effect.zipRight(inContext, answered)) as Effect.Effect<void, never, Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>>,
          (exit) => Scope.close(scope, exit)
        )
      })
    ).pipe(Effect.catchAllCause(() => Effect.void))

/**
 * Upgrade requests (WebSocket handshakes) go through the app like any other: the handler that
 * wants the socket runs `request.upgrade`; one that answers instead (401, 426) writes an ordinary
 * HTTP response on the raw socket. The answer object is made only when it is needed, so nothing is
 * written over a socket the WebSocket has taken (as the platform's NodeHttpServer does).
 */
const upgradeHandler = <R>(
  run: (effect: Effect.Effect<void, never, R>) => Fiber.RuntimeFiber<void, never>,
  serveOne: (request: NodeRequest, res: () => ServerResponse) => Effect.Effect<void, never, R>,
  maxPayload: number
) => {
  let wss: WebSocketServer | undefined
  const server = () => (wss ??= new WebSocketServer({
    noServer: true,
    maxPayload,
    perMessageDeflate: false,
    // No subprotocol is selected, whatever the client offers (Codex offers none).
    handleProtocols: () => false
  }))
  const handle = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    let upgraded = false
    let res: ServerResponse | undefined
    const answer = () => {
      if (res !== undefined) return res
      res = new ServerResponse(req)
      if (upgraded) res.end() // never written: the socket is the WebSocket's
      else {
        res.assignSocket(socket as NetSocket)
        res.once("finish", () => socket.end())
      }
      return res
    }
    const upgrade = Socket.fromWebSocket(Effect.acquireRelease(
      Effect.async<globalThis.WebSocket>((resume) =>
        server().handleUpgrade(req, socket, head, (ws) => {
          upgraded = true
          resume(Effect.succeed(ws as unknown as globalThis.WebSocket))
        })
      ),
      (ws) => Effect.sync(() => ws.close())
    ))
    const fiber = run(serveOne(new NodeRequest(req, req.url ?? "/", undefined, undefined, upgrade), answer))
    // A socket closed after its last write (an answer sent, a WebSocket closing handshake) ended as
    // it should: the request ends on its own. Only one the client dropped interrupts it (a 499).
    socket.once("close", () => {
      if (!socket.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
    })
  }
  return { handle, close: () => wss?.close() }
}

/**
 * The HttpServer on `server` listening as `options` says, closed with the Scope (it stops
 * accepting and waits for open connections, as node:http's close does).
 */
export const make = (
  evaluate: () => Server,
  options: LeanServerOptions
): Effect.Effect<HttpServer.HttpServer, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const server = evaluate()
    yield* Effect.acquireRelease(
      Effect.async<void, HttpServerError.ServeError>((resume) => {
        const onError = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
        server.once("error", onError)
        server.listen(options.port, options.host, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      }),
      () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
    )
    const address = server.address() as AddressInfo
    return HttpServer.make({
      address: { _tag: "TcpAddress", hostname: address.address, port: address.port },
      serve: <E, R>(app: HttpApp.Default<E, R>, middleware?: HttpMiddleware.HttpMiddleware) =>
        Effect.gen(function*() {
          const run = Runtime.runFork(yield* Effect.runtime<Exclude<R, HttpServerRequest.HttpServerRequest | Scope.Scope>>())
          const serveOne = handler(
            middleware === undefined ? app : (middleware(app) as HttpApp.Default<E, R>),
            options.writeStallMillis ?? 0
          )
          const onRequest = (req: IncomingMessage, res: ServerResponse) => {
            const fiber = run(serveOne(new NodeRequest(req), () => res))
            res.once("close", () => {
              if (!res.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
            })
          }
          const onUpgrade = upgradeHandler(run, serveOne, options.maxWebSocketMessageBytes ?? 0)
          server.on("request", onRequest)
          server.on("upgrade", onUpgrade.handle)
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              server.off("request", onRequest)
              server.off("upgrade", onUpgrade.handle)
              onUpgrade.close()
            })
          )
        }) as Effect.Effect<void, never, Scope.Scope>
    })
  })

/** The lean HttpServer as a layer. */
export const layer = (evaluate: () => Server, options: LeanServerOptions) =>
  Layer.scoped(HttpServer.HttpServer, make(evaluate, options))
