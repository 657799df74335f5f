/**
 * GET on a responses path with `Upgrade: websocket`: the Responses WebSocket transport (v2).
 *
 * The key is checked before the upgrade, as on HTTP (a bad key gets the 401 envelope); a group that
 * does not allow the transport (`websocket: false`) gets 426, which makes Codex fall back to HTTP at
 * once; a key or user already holding as many connections as it may gets 429 (./connectionCaps.ts);
 * a subpath the HTTP door refuses gets its 400 invalid_path; a GET that is no upgrade gets 405. After the upgrade each `response.create` is a turn of
 * its own (./turn.ts: the admitted turn, with its own request id and access-log line), read with
 * the handshake's headers (the key included, so a key disabled mid-connection is refused on its
 * next turn). The answer, once the connection ends, is an empty 101 for the log.
 */
import { IncomingMessage } from "node:http"
import { Socket } from "node:net"
import { Effect } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../../../config/AppConfig.js"
import { type Envelope, methodNotAllowed, RouteRefused } from "../../../domain/envelope.js"
import { KeyRepo } from "../../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../../services/lifecycle/Lifecycle.js"
import { authenticate } from "../../kit/auth.js"
import { type DoorProgram, recordFor, Refused, refusedWith } from "../../kit/door.js"
import { pathOf } from "../../kit/request.js"
import { responsesSubpath } from "../subpath.js"
import { serveConnection } from "./connection.js"
import { makeConnectionCounter } from "./connectionCaps.js"
import { makeTurnRunner } from "./turn.js"
import { makeWarmUpAdmission } from "./warmUp.js"

export const websocketRefused = new RouteRefused({
  envelope: {
    status: 426,
    type: "invalid_request_error",
    code: "websocket_not_supported",
    message: "The Responses WebSocket transport is not enabled for this key's group; use HTTP POST",
    param: null,
    noRetry: true
  }
})

const QUEUE_LIMIT = 8

/**
 * The TCP socket under a Node request, which the WebSocket library writes to once upgraded: corked
 * while a batch of events is framed (connection.ts `sendAll`). None on other servers.
 */
const tcpSocketOf = (request: HttpServerRequest.HttpServerRequest) => {
  const source = request.source
  return source instanceof IncomingMessage && source.socket instanceof Socket ? source.socket : undefined
}

/**
 * A WebSocket handshake as Node's HTTP parser takes one (`Upgrade: websocket` with an `upgrade`
 * token in `Connection`); without the token the request is a plain GET (405), as the server does
 * not hand over the socket for it.
 */
const isWebSocketUpgrade = (headers: Readonly<Record<string, string | undefined>>): boolean =>
  headers["upgrade"]?.toLowerCase() === "websocket" &&
  (headers["connection"] ?? "").split(",").some((token) => token.trim().toLowerCase() === "upgrade")

const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

/**
 * What the WebSocket library (ws, under the platform's server) would refuse in a handshake, refused
 * here first, in the envelope: ws answers such a handshake itself with a text/plain 400 (and the
 * upgrade then fails when the socket closes), which is no answer a client of this API can read.
 */
const handshakeProblem = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  if (!WEBSOCKET_KEY.test(headers["sec-websocket-key"] ?? "")) return "Missing or invalid Sec-WebSocket-Key header"
  const version = Number(headers["sec-websocket-version"])
  if (version !== 13 && version !== 8) return "Missing or invalid Sec-WebSocket-Version header (13)"
  const protocols = headers["sec-websocket-protocol"]
  if (protocols !== undefined) {
    const names = protocols.split(",").map((name) => name.replace(/^[ \t]+|[ \t]+$/g, ""))
    if (names.some((name) => !TOKEN.test(name)) || new Set(names).size !== names.length) {
      return "Invalid Sec-WebSocket-Protocol header"
    }
  }
  return undefined
}

const handshakeRefused = (message: string): Envelope => ({
  status: 400,
  type: "invalid_request_error",
  code: "invalid_websocket_handshake",
  message,
  param: null,
  noRetry: true
})

export const makeResponsesWebSocket = Effect.fnUntraced(function*(options: { readonly tracing: boolean }) {
  const keys = yield* KeyRepo
  const turns = yield* makeTurnRunner(options)
  const warmUps = yield* makeWarmUpAdmission
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const holdConnection = makeConnectionCounter({
    perKey: settings.websocketMaxConnectionsPerKey,
    perUser: settings.websocketMaxConnectionsPerUser
  })
  const handler: DoorProgram = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!isWebSocketUpgrade(request.headers)) {
      return yield* new Refused({
        error: new RouteRefused({ envelope: methodNotAllowed(request.method, pathOf(request.url), ["POST"]) }),
        record: undefined
      })
    }
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    // The connection's own line (101, or the refusal) names the transport, the key and its group.
    const record = recordFor("responses_ws", principal)
    const refused = (error: RouteRefused) => new Refused({ error, record })
    if (principal.group.websocket === false) return yield* refused(websocketRefused)
    // Each turn would be refused for it: the handshake is, as an HTTP request would be.
    yield* refusedWith(record)(Effect.fromResult(responsesSubpath(pathOf(request.url))))
    const problem = handshakeProblem(request.headers)
    if (problem !== undefined) return yield* refused(new RouteRefused({ envelope: handshakeRefused(problem) }))
    // Held in the request's Scope: given back when the connection has ended.
    yield* refusedWith(record)(holdConnection(principal))
    const socket = yield* Effect.orDie(request.upgrade)
    yield* serveConnection(socket, {
      runTurn: turns(request),
      admitWarmUp: warmUps(request),
      holdWrites: tcpSocketOf(request),
      conversation: {
        maxBytes: Math.min(settings.websocketMaxTranscriptBytes, settings.maxBodyBytes),
        maxAgeMillis: settings.websocketMaxAgeMillis
      },
      maxAgeMillis: settings.websocketMaxAgeMillis,
      keepAliveMillis: settings.scheduling.keepAliveMillis,
      queueLimit: QUEUE_LIMIT,
      shutdown: lifecycle.shutdownBegun
    }).pipe(Effect.scoped, Effect.catch(() => Effect.void))
    return { response: HttpServerResponse.empty({ status: 101 }), record }
  })
  return handler
})
