/**
 * The node:http server the platform's NodeHttpServer serves on (`NodeHttpServer.layer(() =>
 * makeNodeServer(settings), ...)`), with what it gives clients before any route runs: how long they
 * may take to send a request (HEADER_TIMEOUT_MS, BODY_TIMEOUT_MS), how many connections may be open
 * (MAX_CONNECTIONS), and how a request the HTTP parser rejects is answered (431 for headers too
 * large, 408 for a request too slow, 400 otherwise), in the error envelope with an `x-request-id`,
 * where the socket still allows an answer (node's `clientError` event), after which the connection
 * is closed. Once the platform closes it, keep-alive connections are closed as they fall idle.
 */
import { Server } from "node:http"
import type { Duplex } from "node:stream"
import type { SettingsShape } from "../config/AppConfig.js"
import { envelopeBody, type Envelope } from "../domain/envelope.js"
import { newRequestId } from "../domain/ids.js"

const refusalOf = (error: Error & { readonly code?: string }): Envelope => {
  if (error.code === "HPE_HEADER_OVERFLOW") {
    return { status: 431, type: "invalid_request_error", code: "headers_too_large", message: "Request headers are too large", param: null, noRetry: true }
  }
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return { status: 408, type: "invalid_request_error", code: "request_timeout", message: "The request took too long to arrive", param: null }
  }
  return { status: 400, type: "invalid_request_error", code: "bad_request", message: "The request is not valid HTTP", param: null, noRetry: true }
}

const REASONS: Readonly<Record<number, string>> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" }

/**
 * How long a refused client gets to read its answer and close before the server closes the
 * connection itself: node:http keeps a connection half open after its answer (the server allows
 * half-open sockets), so a client that never closes would hold its slot and descriptor for ever.
 */
const CLOSE_AFTER_ANSWER_MILLIS = 1_000

/**
 * Answers a request the parser refused, then closes the connection: at once when the client closes
 * its side, else after CLOSE_AFTER_ANSWER_MILLIS. Not at the flush itself: what the client sent
 * past the refused bytes may still be unread, and closing over unread bytes resets the connection,
 * which can lose the answer on the client's side.
 */
const answerParseError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  // A socket the client reset, or one that can take nothing more, is only closed.
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const envelope = refusalOf(error)
  const body = JSON.stringify(envelopeBody(envelope))
  const timer = setTimeout(() => socket.destroy(), CLOSE_AFTER_ANSWER_MILLIS)
  timer.unref()
  socket.once("close", () => clearTimeout(timer))
  // Whatever else the client sends is read and dropped, so that its end is seen.
  socket.on("end", () => socket.destroy())
  socket.resume()
  socket.end(
    `HTTP/1.1 ${envelope.status} ${REASONS[envelope.status] ?? "Bad Request"}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${newRequestId()}\r\nconnection: close\r\n\r\n${body}`
  )
}

/** How often a closing server looks for keep-alive connections that fell idle. */
const IDLE_SWEEP_MILLIS = 50

/**
 * node:http's server, whose `close` (called by the platform when it stops serving) also closes
 * keep-alive connections as they fall idle, until the server has closed: node closes those idle
 * at that moment, and a connection finishing its answer later would otherwise hold the close up
 * until its keep-alive timeout.
 */
class GatewayNodeServer extends Server {
  private sweep: NodeJS.Timeout | undefined

  override close(callback?: (error?: Error) => void): this {
    if (this.sweep === undefined && this.listening) {
      this.sweep = setInterval(() => this.closeIdleConnections(), IDLE_SWEEP_MILLIS)
      this.once("close", () => clearInterval(this.sweep))
    }
    return super.close(callback)
  }
}

/** A node:http server with the gateway's limits on its clients. */
export const makeNodeServer = (settings: SettingsShape): Server => {
  const server = new GatewayNodeServer({
    headersTimeout: settings.headerTimeoutMillis,
    requestTimeout: settings.bodyTimeoutMillis,
    // node checks both timeouts on this period (default 30 s, which would add up to 30 s to each).
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, settings.headerTimeoutMillis / 4))
  })
  if (settings.maxConnections > 0) server.maxConnections = settings.maxConnections
  server.on("clientError", answerParseError)
  return server
}
