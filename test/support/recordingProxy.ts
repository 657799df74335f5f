/**
 * A transparent HTTP proxy in front of a server under test that records each exchange as the
 * client and the server saw it: the request's headers and body exactly as the client sent them,
 * and the server's status, headers and body. For clients we cannot instrument (a native CLI), so a
 * test can compare what reached an upstream with what the client sent, and print what the server
 * answered when a client fails.
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http"
import { listenLocal } from "./localServer.js"

export interface RecordedExchange {
  readonly method: string
  readonly url: string
  readonly requestHeaders: IncomingHttpHeaders
  readonly requestBody: string
  /** Filled once the server's answer has ended (or failed). */
  status?: number
  responseHeaders?: IncomingHttpHeaders
  responseBody?: string
  error?: string
}

export interface RecordingProxy {
  readonly url: string
  readonly exchanges: ReadonlyArray<RecordedExchange>
  readonly close: () => Promise<void>
}

/** Kept per answer: enough to show an error or the start of a stream, not a whole long stream. */
const MAX_RECORDED_RESPONSE = 64 * 1024

export const startRecordingProxy = async (target: string): Promise<RecordingProxy> => {
  const exchanges: Array<RecordedExchange> = []
  const to = new URL(target)
  const server = await listenLocal((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks)
      const exchange: RecordedExchange = {
        method: req.method ?? "GET",
        url: req.url ?? "/",
        requestHeaders: { ...req.headers },
        requestBody: body.toString("utf8")
      }
      exchanges.push(exchange)
      const upstream = httpRequest(
        {
          host: to.hostname,
          port: to.port,
          method: exchange.method,
          path: exchange.url,
          headers: { ...req.headers, host: to.host }
        },
        (answer) => {
          exchange.status = answer.statusCode ?? 0
          exchange.responseHeaders = { ...answer.headers }
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          let recorded = ""
          answer.on("data", (c: Buffer) => {
            if (recorded.length < MAX_RECORDED_RESPONSE) recorded += c.toString("utf8")
            res.write(c)
          })
          answer.on("end", () => {
            exchange.responseBody = recorded
            res.end()
          })
          answer.on("error", (error) => {
            exchange.responseBody = recorded
            exchange.error = String(error)
            res.destroy()
          })
        }
      )
      upstream.on("error", (error) => {
        exchange.error = String(error)
        if (res.headersSent) return void res.destroy()
        res.writeHead(502, { "content-type": "text/plain" })
        res.end(`recording proxy: ${String(error)}`)
      })
      upstream.end(body)
    })
  }, "recording proxy", { keepAlive: true })
  return {
    url: server.url,
    exchanges,
    close: server.close
  }
}
