/**
 * A real `node:http` fake of the OpenAI Responses and Anthropic Messages upstreams, for tests and
 * benchmarks that drive the gateway over a socket. Answers come from the pure simulators, framed
 * exactly as the real platforms frame them; faults (status codes, cut streams, hangs, slow streams)
 * can be injected per request. No vitest imports here, so benchmarks can use it too.
 *
 * Run directly (`tsx test/support/fakeUpstream.ts`) it listens on $PORT (default 0) and prints
 * `{"url": "..."}` as one JSON line.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { encodeSseEvent } from "../../src/services/upstream/simulator/sse.js"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { simulateResponses } from "../../src/services/upstream/simulator/responses.js"
import { listenLocal } from "./localServer.js"
import { parseBody, readBody } from "./requestBody.js"

export interface FakeUpstreamRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: unknown
}

export type Fault =
  | { readonly _tag: "Status"; readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }
  | { readonly _tag: "CutAfterEvents"; readonly events: number }
  | { readonly _tag: "HangBeforeHeaders"; readonly ms: number }
  | { readonly _tag: "SlowEvents"; readonly delayMs: number }

export interface FakeUpstream {
  readonly url: string
  readonly requests: ReadonlyArray<FakeUpstreamRequest>
  readonly setFault: (fault: Fault | undefined) => void
  readonly setFaults: (faults: ReadonlyArray<Fault | undefined>) => void
  /**
   * Sockets currently open that have carried at least one request. Idle spare connections that an
   * HTTP client opens on its own (undici does this right after an aborted request) are not counted.
   */
  readonly openConnections: () => number
  /** Requests whose answer hasn't finished (or been cut) yet. */
  readonly inFlight: () => number
  readonly aborted: () => number
  readonly close: () => Promise<void>
}

type Platform = "openai" | "anthropic"

const MODELS = [
  { id: "gpt-5", object: "model", created: 1_700_000_000, owned_by: "openai" },
  { id: "gpt-5-mini", object: "model", created: 1_700_000_000, owned_by: "openai" },
  { id: "claude-sonnet-4-5", object: "model", created: 1_700_000_000, owned_by: "anthropic" },
  { id: "claude-haiku-4-5", object: "model", created: 1_700_000_000, owned_by: "anthropic" }
]

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

const openaiErrorType = (status: number): { type: string; code: string | null } => {
  if (status === 400) return { type: "invalid_request_error", code: null }
  if (status === 401) return { type: "invalid_request_error", code: "invalid_api_key" }
  if (status === 403) return { type: "invalid_request_error", code: "unsupported_country_region_territory" }
  if (status === 404) return { type: "invalid_request_error", code: "not_found" }
  if (status === 429) return { type: "requests", code: "rate_limit_exceeded" }
  return { type: "server_error", code: "server_error" }
}

const anthropicErrorType = (status: number): string => {
  switch (status) {
    case 400:
      return "invalid_request_error"
    case 401:
      return "authentication_error"
    case 402:
      return "billing_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    case 429:
      return "rate_limit_error"
    case 504:
      return "timeout_error"
    case 529:
      return "overloaded_error"
    default:
      return "api_error"
  }
}

export const openaiErrorBody = (status: number, message: string): Record<string, unknown> => {
  const { type, code } = openaiErrorType(status)
  return { error: { message, type, param: null, code } }
}

export const anthropicErrorBody = (status: number, message: string, requestId?: string): Record<string, unknown> => ({
  type: "error",
  error: { type: anthropicErrorType(status), message },
  ...(requestId === undefined ? {} : { request_id: requestId })
})

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      resolve()
    }
    signal.addEventListener("abort", onAbort, { once: true })
  })



/** What OpenAI's `POST /v1/responses/compact` answers (the spec's CompactResource), with a stand-in ciphertext. */
const compactedWindow = (body: Record<string, unknown>): Record<string, unknown> => {
  const input = body["input"]
  const items: ReadonlyArray<unknown> = typeof input === "string" ? [{ role: "user", content: input }] : Array.isArray(input) ? input : []
  const users = items.flatMap((item, i) => {
    if (!isRecord(item) || item["role"] !== "user") return []
    const content = item["content"]
    const parts = typeof content === "string" ? [{ type: "input_text", text: content }] : Array.isArray(content) ? content : []
    return [{ id: `msg_fake_compact_${i}`, type: "message", status: "completed", role: "user", content: parts }]
  })
  return {
    id: `resp_fake_compact_${Date.now()}`,
    object: "response.compaction",
    created_at: Math.floor(Date.now() / 1000),
    output: [...users, { id: "cmp_fake_0", type: "compaction", encrypted_content: "gAAAA-fake-openai-ciphertext" }],
    usage: { input_tokens: 120, input_tokens_details: { cached_tokens: 0 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 160 }
  }
}

export const startFakeUpstream = async (options: { readonly port?: number } = {}): Promise<FakeUpstream> => {
  const requests: Array<FakeUpstreamRequest> = []
  /** Sockets that have carried at least one request (HTTP clients may pre-open idle spares). */
  const usedSockets = new Set<Socket>()
  let inFlightCount = 0
  let persistentFault: Fault | undefined
  let queuedFaults: Array<Fault | undefined> = []
  let abortedCount = 0
  let requestCounter = 0
  const shutdown = new AbortController()

  const takeFault = (): Fault | undefined => (queuedFaults.length > 0 ? queuedFaults.shift() : persistentFault)

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Tracks the client going away before we finished (and lets timers stop early).
    const gone = new AbortController()
    let finished = false
    let cutByServer = false
    const onShutdown = (): void => gone.abort()
    usedSockets.add(req.socket)
    inFlightCount++
    shutdown.signal.addEventListener("abort", onShutdown, { once: true })
    res.on("close", () => {
      inFlightCount--
      shutdown.signal.removeEventListener("abort", onShutdown)
      if (!finished && !cutByServer && !shutdown.signal.aborted && !res.writableFinished) abortedCount++
      gone.abort()
    })

    const raw = await readBody(req)
    const method = req.method ?? "GET"
    const path = (req.url ?? "/").split("?")[0] ?? "/"
    const body = parseBody(raw)
    requests.push({ method, path, headers: { ...req.headers }, body })
    const requestId = `req_fake_${++requestCounter}`

    const end = (status: number, payload: string, headers: Record<string, string>): void => {
      if (gone.signal.aborted) return
      res.writeHead(status, { "content-length": String(Buffer.byteLength(payload)), ...headers })
      res.end(payload)
      finished = true
    }
    const sendJson = (status: number, payload: unknown, headers: Record<string, string> = {}): void =>
      end(status, JSON.stringify(payload), { "content-type": "application/json", ...headers })

    const platform: Platform | undefined =
      method === "POST" && (path === "/v1/responses" || path.startsWith("/v1/responses/"))
        ? "openai"
        : method === "POST" && path === "/v1/messages"
          ? "anthropic"
          : undefined
    const idHeader: Record<string, string> = platform === "anthropic" ? { "request-id": requestId } : { "x-request-id": requestId }

    if (platform === undefined) {
      if (method === "GET" && path === "/v1/models") return sendJson(200, { object: "list", data: MODELS }, idHeader)
      return sendJson(404, openaiErrorBody(404, `Unknown route: ${method} ${path}`), idHeader)
    }

    const fault = takeFault()
    if (fault?._tag === "HangBeforeHeaders") {
      await sleep(fault.ms, gone.signal)
      if (gone.signal.aborted) return
    }
    if (fault?._tag === "Status") {
      const errorBody = fault.body !== undefined
        ? fault.body
        : platform === "openai"
          ? openaiErrorBody(fault.status, `Simulated upstream error ${fault.status}`)
          : anthropicErrorBody(fault.status, `Simulated upstream error ${fault.status}`, requestId)
      if (typeof errorBody === "string") {
        return end(fault.status, errorBody, { "content-type": "text/plain", ...idHeader, ...fault.headers })
      }
      return sendJson(fault.status, errorBody, { ...idHeader, ...fault.headers })
    }

    // Authentication as the real platforms check it.
    if (platform === "openai") {
      const auth = header(req, "authorization")
      if (auth === undefined || !/^Bearer\s+\S+/i.test(auth)) {
        return sendJson(
          401,
          openaiErrorBody(401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."),
          idHeader
        )
      }
    } else {
      const key = header(req, "x-api-key")
      if (key === undefined || key.length === 0) {
        return sendJson(401, anthropicErrorBody(401, "x-api-key header is required", requestId), idHeader)
      }
      if (header(req, "anthropic-version") === undefined) {
        return sendJson(400, anthropicErrorBody(400, "anthropic-version: header is required", requestId), idHeader)
      }
    }
    if (!isRecord(body)) {
      const message = "Could not parse the JSON body of your request."
      return sendJson(400, platform === "openai" ? openaiErrorBody(400, message) : anthropicErrorBody(400, message, requestId), idHeader)
    }

    // OpenAI's compact endpoint (JSON only): the input's user messages, then its own opaque compaction item.
    if (platform === "openai" && path === "/v1/responses/compact" && body["stream"] !== true) {
      return sendJson(200, compactedWindow(body), idHeader)
    }

    const simulated = platform === "openai" ? simulateResponses(body, { createdAt: Math.floor(Date.now() / 1000) }) : simulateMessages(body)
    const cut = fault?._tag === "CutAfterEvents" ? fault.events : undefined
    const delayMs = fault?._tag === "SlowEvents" ? fault.delayMs : 0

    const cutNow = (): void => {
      cutByServer = true
      res.destroy()
    }

    if (body["stream"] !== true) {
      if (delayMs > 0) {
        await sleep(delayMs, gone.signal)
        if (gone.signal.aborted) return
      }
      if (cut !== undefined) {
        // A JSON answer cut mid-body: headers and half the bytes, then the socket dies.
        const payload = JSON.stringify(simulated.json)
        res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)), ...idHeader })
        res.write(payload.slice(0, Math.floor(payload.length / 2)), () => cutNow())
        return
      }
      return sendJson(200, simulated.json, idHeader)
    }

    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      ...idHeader
    })
    res.flushHeaders()
    let sent = 0
    for (const event of simulated.events) {
      if (cut !== undefined && sent >= cut) break
      if (delayMs > 0 && sent > 0) await sleep(delayMs, gone.signal)
      if (gone.signal.aborted || res.destroyed) return
      const frame = encodeSseEvent(event, { eventLines: true })
      await new Promise<void>((resolve) => {
        res.write(frame, () => resolve())
      })
      sent++
    }
    if (gone.signal.aborted || res.destroyed) return
    if (cut !== undefined) return cutNow()
    finished = true
    res.end()
  }

  const local = await listenLocal(
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { "content-type": "application/json" })
          res.end(JSON.stringify(openaiErrorBody(500, String(error))))
        } else {
          res.destroy()
        }
      })
    },
    "fake upstream",
    { keepAlive: true, port: options.port }
  )
  // Set before the event loop can accept a connection, so they hold for every one.
  local.server.keepAliveTimeout = 30_000
  local.server.on("connection", (socket: Socket) => {
    socket.on("close", () => usedSockets.delete(socket))
  })

  return {
    url: local.url,
    requests,
    setFault: (fault) => {
      persistentFault = fault
    },
    setFaults: (faults) => {
      queuedFaults = [...faults]
    },
    openConnections: () => usedSockets.size,
    inFlight: () => inFlightCount,
    aborted: () => abortedCount,
    close: () => {
      shutdown.abort()
      return local.close()
    }
  }
}

const runAsCli = (process.argv[1] ?? "").endsWith("fakeUpstream.ts")
if (runAsCli) {
  const port = Number(process.env["PORT"] ?? "0")
  startFakeUpstream({ port: Number.isFinite(port) ? port : 0 })
    .then((upstream) => {
      process.stdout.write(`${JSON.stringify({ url: upstream.url })}\n`)
      const stop = (): void => {
        void upstream.close().finally(() => process.exit(0))
      }
      process.on("SIGINT", stop)
      process.on("SIGTERM", stop)
    })
    .catch((error: unknown) => {
      process.stderr.write(`${String(error)}\n`)
      process.exit(1)
    })
}
