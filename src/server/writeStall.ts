/**
 * The write-stall cut (STREAM_WRITE_TIMEOUT_MS) on the platform's Node server: a client that takes
 * nothing while the server has bytes waiting for it is cut, so that it cannot hold a slot and an
 * upstream stream for ever. The platform's server writes a Stream body with backpressure (it waits
 * for the socket's `drain`), and Node's socket timeout measures the time since the socket last
 * made progress: when it fires with bytes still queued, the client has stopped reading. A quiet
 * stream (a slow upstream, nothing queued) is left alone.
 */
import { IncomingMessage, type ServerResponse } from "node:http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"

/**
 * Watches the answer to `request` (a request of the platform's Node server; any other is left
 * alone): when its socket has made no progress for `millis` with bytes waiting, `onStall` is told and
 * the connection is destroyed (the server then interrupts the request as a client that left).
 */
export const watchWriteStall = (request: HttpServerRequest.HttpServerRequest, millis: number, onStall: () => void): void => {
  if (millis <= 0 || !(request.source instanceof IncomingMessage)) return
  const res = NodeHttpServerRequest.toServerResponse(request) as ServerResponse
  const socket = res.socket
  if (socket === null || res.writableEnded) return
  // Node's keep-alive timer replaces this one once the response has finished.
  res.setTimeout(millis, () => {
    if (res.writableEnded || (!res.writableNeedDrain && socket.writableLength === 0)) return // quiet, not stalled
    onStall()
    res.destroy()
  })
}
