/**
 * A scripted `node:http` fake of both upstream platforms for the Messages door tests. Unlike the
 * shared fakeUpstream.ts it keeps what the door tests compare against: each request's raw body,
 * query and the credential it came with (which account the gateway picked), and the exact bytes
 * answered. It also serves Anthropic's `count_tokens`. By default answers come from the pure
 * simulators; a test scripts other answers (a reasoning item, cache reads, an error status, a
 * stream that is cut or held open) with `script`, which sees each request before the default does.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { simulateResponses } from "../../src/services/upstream/simulator/responses.js"
import { encodeSseEvent } from "../../src/services/upstream/simulator/sse.js"
import { listenLocal } from "./localServer.js"
import { readBody } from "./requestBody.js"

export type Json = Record<string, unknown>

export interface Seen {
  readonly method: string
  readonly path: string
  /** The query string without `?` ("" when none). */
  readonly query: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly raw: string
  /** The body parsed, when it is a JSON object. */
  readonly body: Json | undefined
  /** The upstream credential the gateway sent (x-api-key or the bearer token): names the account. */
  readonly credential: string | undefined
  /** The status and body bytes answered, as written (up to a cut). */
  status: number
  sent: string
  /** Whether the caller went away before the answer was complete. */
  abandoned: boolean
}

export type Reply =
  | { readonly _tag: "Json"; readonly status: number; readonly body: unknown; readonly headers?: Record<string, string> }
  /** `end`: complete; `cut`: the socket is destroyed after the events; `hold`: open until the caller leaves. */
  | { readonly _tag: "Sse"; readonly events: ReadonlyArray<Json>; readonly ending: "end" | "cut" | "hold" }

/** Returns the answer for a request, or undefined to leave it to the next script or the default. */
export type Script = (seen: Seen) => Reply | undefined

export interface MessagesUpstream {
  readonly url: string
  readonly requests: ReadonlyArray<Seen>
  /** Adds a script tried before the defaults (newest first); the returned function removes it. */
  readonly script: (script: Script) => () => void
  readonly close: () => Promise<void>
}

/** What the fake's count_tokens answers: a number the gateway cannot have made up. */
export const upstreamTokenCount = (raw: string): number => 7_000 + raw.length

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const flatHeaders = (req: IncomingMessage): Record<string, string | undefined> => {
  const out: Record<string, string | undefined> = {}
  for (const [k, v] of Object.entries(req.headers)) out[k] = Array.isArray(v) ? v.join(", ") : v
  return out
}

const credentialOf = (headers: Record<string, string | undefined>): string | undefined => {
  const key = headers["x-api-key"]
  if (key !== undefined && key !== "") return key
  const auth = headers["authorization"]
  return auth === undefined ? undefined : /^Bearer\s+(\S+)/i.exec(auth)?.[1]
}

const parse = (raw: string): Json | undefined => {
  try {
    const json = JSON.parse(raw) as unknown
    return isRecord(json) ? json : undefined
  } catch {
    return undefined
  }
}

const anthropicError = (status: number, type: string, message: string): Reply => ({
  _tag: "Json",
  status,
  body: { type: "error", error: { type, message } }
})

const defaultReply = (seen: Seen): Reply => {
  const { body, path } = seen
  const anthropic = path.startsWith("/v1/messages")
  if (anthropic) {
    if (seen.headers["x-api-key"] === undefined) return anthropicError(401, "authentication_error", "x-api-key header is required")
    if (seen.headers["anthropic-version"] === undefined) {
      return anthropicError(400, "invalid_request_error", "anthropic-version: header is required")
    }
  } else if (seen.credential === undefined) {
    return { _tag: "Json", status: 401, body: { error: { message: "no key", type: "invalid_request_error", param: null, code: null } } }
  }
  if (body === undefined) return { _tag: "Json", status: 400, body: { error: { message: "not JSON", type: "invalid_request_error" } } }
  if (path === "/v1/messages/count_tokens") return { _tag: "Json", status: 200, body: { input_tokens: upstreamTokenCount(seen.raw) } }
  const simulated = path === "/v1/messages"
    ? simulateMessages(body)
    : path === "/v1/responses"
    ? simulateResponses(body, { createdAt: 1_750_000_000 })
    : undefined
  if (simulated === undefined) return { _tag: "Json", status: 404, body: { error: { message: `no route ${path}` } } }
  return body["stream"] === true
    ? { _tag: "Sse", events: simulated.events, ending: "end" }
    : { _tag: "Json", status: 200, body: simulated.json }
}

export const startMessagesUpstream = async (): Promise<MessagesUpstream> => {
  const requests: Array<Seen> = []
  const scripts: Array<Script> = []
  let counter = 0

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req)
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const headers = flatHeaders(req)
    const seen: Seen = {
      method: req.method ?? "GET",
      path: q < 0 ? url : url.slice(0, q),
      query: q < 0 ? "" : url.slice(q + 1),
      headers,
      raw,
      body: parse(raw),
      credential: credentialOf(headers),
      status: 0,
      sent: "",
      abandoned: false
    }
    requests.push(seen)
    let complete = false
    res.on("close", () => {
      if (!complete) seen.abandoned = true
    })
    const id = `req_scripted_${++counter}`
    const idHeader = seen.path.startsWith("/v1/messages") ? { "request-id": id } : { "x-request-id": id }

    let reply: Reply | undefined
    for (const script of [...scripts].reverse()) {
      reply = script(seen)
      if (reply !== undefined) break
    }
    reply ??= defaultReply(seen)
    seen.status = reply._tag === "Json" ? reply.status : 200

    if (reply._tag === "Json") {
      const payload = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body)
      res.writeHead(reply.status, {
        "content-type": typeof reply.body === "string" ? "text/plain" : "application/json",
        "content-length": String(Buffer.byteLength(payload)),
        ...idHeader,
        ...reply.headers
      })
      seen.sent = payload
      complete = true
      res.end(payload)
      return
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...idHeader })
    res.flushHeaders()
    for (const event of reply.events) {
      if (res.destroyed) return
      const frame = encodeSseEvent(event, { eventLines: true })
      seen.sent += frame
      await new Promise<void>((resolve) => res.write(frame, () => resolve()))
    }
    if (reply.ending === "end") {
      complete = true
      res.end()
    } else if (reply.ending === "cut") {
      complete = true // cut by us, not abandoned by the caller
      res.destroy()
    }
    // "hold": nothing more is written; the caller leaving closes the response.
  }

  const server = await listenLocal((req, res) => {
    handle(req, res).catch(() => res.destroy())
  }, "messages upstream", { keepAlive: true })

  return {
    url: server.url,
    requests,
    script: (script) => {
      scripts.push(script)
      return () => {
        const i = scripts.indexOf(script)
        if (i >= 0) scripts.splice(i, 1)
      }
    },
    close: server.close
  }
}

// ---------------------------------------------------------------------------------------------
// Responses answers the simulator does not give: reasoning items, cached input
// ---------------------------------------------------------------------------------------------

export interface ResponsesUsage {
  readonly input: number
  readonly cached: number
  readonly output: number
}

/**
 * A complete Responses answer with the given output items, as JSON and as the SSE a server sends
 * (each item added, its text streamed as deltas, then done; response.completed last).
 */
export const responsesAnswer = (
  id: string,
  model: string,
  output: ReadonlyArray<Json>,
  usage: ResponsesUsage
): { readonly json: Json; readonly events: ReadonlyArray<Json> } => {
  const base = { id, object: "response", created_at: 1_750_000_000, model, store: false }
  const json: Json = {
    ...base,
    status: "completed",
    output,
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: usage.cached },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output
    }
  }
  const events: Array<Json> = [{ type: "response.created", response: { ...base, status: "in_progress", output: [] } }]
  output.forEach((item, output_index) => {
    const item_id = item["id"]
    if (item["type"] === "reasoning") {
      events.push({ type: "response.output_item.added", output_index, item: { type: "reasoning", id: item_id, summary: [] } })
      const summary = Array.isArray(item["summary"]) ? (item["summary"] as Array<Json>) : []
      summary.forEach((part, summary_index) => {
        events.push({ type: "response.reasoning_summary_text.delta", item_id, output_index, summary_index, delta: part["text"] })
      })
    } else if (item["type"] === "message") {
      events.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", content: [] } })
      const content = Array.isArray(item["content"]) ? (item["content"] as Array<Json>) : []
      content.forEach((part, content_index) => {
        events.push({ type: "response.output_text.delta", item_id, output_index, content_index, delta: part["text"] })
      })
    } else {
      events.push({ type: "response.output_item.added", output_index, item: { ...item, arguments: "" } })
      events.push({ type: "response.function_call_arguments.delta", item_id, output_index, delta: item["arguments"] })
    }
    events.push({ type: "response.output_item.done", output_index, item })
  })
  events.push({ type: "response.completed", response: json })
  return { json, events: events.map((e, sequence_number) => ({ ...e, sequence_number })) }
}
