/**
 * The benchmark's upstream: a bare `node:http` server that answers OpenAI Responses
 * (`POST /v1/responses`) and Anthropic Messages (`POST /v1/messages`), JSON or SSE, with bodies
 * captured ONCE from the simulator at startup. Per request it only reads the body, looks for
 * `"stream":true` and writes precomputed bytes, so its CPU cost is small and constant and what the
 * benchmark measures is the thing in front of it.
 *
 * Streams are written one event per `write` (each event its own HTTP chunk), as a real upstream
 * sends them, but without delays between events, unless pacing is on: `POST /bench/pace` with
 * `{"ms": 40}` makes every SSE answer from then on write its first event at once and each next
 * one 40 ms later, as a model generating tokens does (`{"ms": 0}` switches it off). The long-lived
 * streams scenario (bench/longStreams.ts) uses it. Pacing is a switch on the fake, not something
 * the request selects, because the gateway builds its own upstream request (URL from the account,
 * its own headers): only the body reaches the fake, and that must stay exactly the body the
 * passthrough SSE scenario sends.
 *
 * Run: `node --import tsx bench/fakeUpstream.ts` (PORT, default 0). Prints one JSON line
 * `{"url": "http://127.0.0.1:NNNN", ...}` when listening. Exits when stdin closes (its parent died).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { encodeSseEvents, simulateMessages, simulateResponses } from "../src/services/upstream/simulator/index.js"
import { exitWithParent, messagesBody, OPENAI_MODEL, responsesBody } from "./shared.js"

interface Canned {
  readonly json: Buffer
  readonly events: ReadonlyArray<Buffer>
}

const CREATED_AT = 1_700_000_000

const capture = (sim: { json: Record<string, unknown>; events: ReadonlyArray<Record<string, unknown>> }): Canned => ({
  json: Buffer.from(JSON.stringify(sim.json)),
  events: sim.events.map((event) => Buffer.from(encodeSseEvents([event], { eventLines: true })))
})

const responses = capture(
  simulateResponses(JSON.parse(responsesBody(OPENAI_MODEL, true)) as Record<string, unknown>, { createdAt: CREATED_AT })
)
const messages = capture(
  simulateMessages(JSON.parse(messagesBody(true)) as Record<string, unknown>, { createdAt: CREATED_AT })
)

const JSON_HEADERS = (length: number, idHeader: string): Record<string, string> => ({
  "content-type": "application/json",
  "content-length": String(length),
  [idHeader]: "req_bench_fake"
})

const SSE_HEADERS = (idHeader: string): Record<string, string> => ({
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  [idHeader]: "req_bench_fake"
})

const STREAM_TRUE = /"stream"\s*:\s*true/

/** Milliseconds between two SSE events; 0 writes the whole stream at once. Set by POST /bench/pace. */
let paceMs = 0

/** One event now, the next `ms` later, ... ; stops if the client goes away. */
const writePaced = (res: ServerResponse, events: ReadonlyArray<Buffer>, ms: number): void => {
  let i = 0
  let timer: NodeJS.Timeout | undefined
  const next = (): void => {
    if (i === events.length - 1) {
      res.end(events[i])
      return
    }
    res.write(events[i++])
    timer = setTimeout(next, ms)
  }
  res.on("close", () => clearTimeout(timer))
  next()
}

const answer = (res: ServerResponse, canned: Canned, stream: boolean, idHeader: string): void => {
  if (!stream) {
    res.writeHead(200, JSON_HEADERS(canned.json.length, idHeader))
    res.end(canned.json)
    return
  }
  res.writeHead(200, SSE_HEADERS(idHeader))
  if (paceMs > 0) return writePaced(res, canned.events, paceMs)
  const last = canned.events.length - 1
  for (let i = 0; i < last; i++) res.write(canned.events[i])
  res.end(canned.events[last])
}

const handle = (req: IncomingMessage, res: ServerResponse): void => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const path = req.url ?? "/"
    const body = chunks.length === 1 ? chunks[0]!.toString("latin1") : Buffer.concat(chunks).toString("latin1")
    const stream = STREAM_TRUE.test(body)
    if (req.method === "POST" && path.startsWith("/v1/responses")) return answer(res, responses, stream, "x-request-id")
    if (req.method === "POST" && path.startsWith("/v1/messages")) return answer(res, messages, stream, "request-id")
    if (req.method === "POST" && path === "/bench/pace") {
      const ms = Number((JSON.parse(body) as { ms?: unknown }).ms)
      paceMs = Number.isFinite(ms) && ms > 0 ? ms : 0
      res.writeHead(204)
      res.end()
      return
    }
    if (path === "/health") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" })
      res.end("ok")
      return
    }
    const payload = JSON.stringify({ error: { type: "invalid_request_error", message: `Unknown route ${req.method} ${path}` } })
    res.writeHead(404, { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) })
    res.end(payload)
  })
}

const server = createServer({ keepAlive: true, keepAliveTimeout: 60_000 }, handle)
server.keepAliveTimeout = 60_000
server.headersTimeout = 65_000
server.listen(Number(process.env["PORT"] ?? "0"), "127.0.0.1", () => {
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("fake upstream: no TCP address")
  process.stdout.write(
    `${JSON.stringify({
      url: `http://127.0.0.1:${address.port}`,
      events: { responses: responses.events.length, messages: messages.events.length },
      bytes: {
        responsesJson: responses.json.length,
        responsesSse: responses.events.reduce((n, b) => n + b.length, 0),
        messagesJson: messages.json.length,
        messagesSse: messages.events.reduce((n, b) => n + b.length, 0)
      }
    })}\n`
  )
})
exitWithParent()
process.on("SIGTERM", () => process.exit(0))
process.on("SIGINT", () => process.exit(0))
