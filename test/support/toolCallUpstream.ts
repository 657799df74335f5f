/**
 * A `node:http` fake of the OpenAI Responses and Anthropic Messages upstreams whose every answer
 * reports calls of a tool the provider bills per call: two web searches, as the platforms report
 * them. A Responses answer carries two `web_search_call` output items (JSON; a stream's
 * `response.output_item.done` events and its `response.completed` output); a Messages answer two
 * `server_tool_use` blocks and `usage.server_tool_use.web_search_requests: 2` (the stream's
 * `message_delta`). Every request is recorded with its path and parsed body.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import type { IncomingMessage, ServerResponse } from "node:http"
import { encodeSseEvent } from "../../src/services/upstream/simulator/sse.js"
import { answerApiError, listenLocal } from "./localServer.js"
import { parseBody, readBody } from "./requestBody.js"

export interface ToolCallRequest {
  readonly path: string
  readonly body: unknown
}

export interface ToolCallUpstream {
  readonly url: string
  readonly requests: ReadonlyArray<ToolCallRequest>
  readonly close: () => Promise<void>
}

/** The searches each answer reports. */
export const SEARCHES = 2

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const responsesAnswer = (model: string, n: number): { readonly json: Json; readonly events: ReadonlyArray<Json> } => {
  const base: Json = responseObject({ id: `resp_tools_${n}`, model, createdAt: 1_700_000_000, status: "in_progress" })
  const searches: Array<Json> = Array.from({ length: SEARCHES }, (_, i) => ({
    id: `ws_${n}_${i}`,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: `query ${i}` }
  }))
  const text = "Found it."
  const message: Json = {
    id: `msg_tools_${n}`,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [] }]
  }
  const json: Json = {
    ...base,
    status: "completed",
    output: [...searches, message],
    usage: { input_tokens: 120, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 129 }
  }
  const events: Array<Json> = []
  const emit = (type: string, fields: Json): void => {
    events.push({ type, sequence_number: events.length, ...fields })
  }
  emit("response.created", { response: base })
  emit("response.in_progress", { response: base })
  searches.forEach((item, i) => {
    emit("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress" } })
    emit("response.web_search_call.in_progress", { output_index: i, item_id: item["id"] })
    emit("response.web_search_call.searching", { output_index: i, item_id: item["id"] })
    emit("response.web_search_call.completed", { output_index: i, item_id: item["id"] })
    emit("response.output_item.done", { output_index: i, item })
  })
  const at = { item_id: message["id"], output_index: SEARCHES, content_index: 0 }
  const part = (t: string): Json => ({ type: "output_text", text: t, annotations: [] })
  emit("response.output_item.added", { output_index: SEARCHES, item: { ...message, status: "in_progress", content: [] } })
  emit("response.content_part.added", { ...at, part: part("") })
  emit("response.output_text.delta", { ...at, delta: text })
  emit("response.output_text.done", { ...at, text })
  emit("response.content_part.done", { ...at, part: part(text) })
  emit("response.output_item.done", { output_index: SEARCHES, item: message })
  emit("response.completed", { response: json })
  return { json, events }
}

const messagesAnswer = (model: string, n: number): { readonly json: Json; readonly events: ReadonlyArray<Json> } => {
  const blocks: Array<Json> = []
  for (let i = 0; i < SEARCHES; i++) {
    blocks.push({ type: "server_tool_use", id: `srvtoolu_${n}_${i}`, name: "web_search", input: { query: `query ${i}` } })
    blocks.push({ type: "web_search_tool_result", tool_use_id: `srvtoolu_${n}_${i}`, content: [] })
  }
  const text = "Found it."
  blocks.push({ type: "text", text })
  const usage = {
    input_tokens: 120,
    output_tokens: 9,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    server_tool_use: { web_search_requests: SEARCHES }
  }
  const json: Json = {
    id: `msg_tools_${n}`,
    type: "message",
    role: "assistant",
    model,
    content: blocks,
    stop_reason: "end_turn",
    stop_sequence: null,
    usage
  }
  const events: Array<Json> = [{
    type: "message_start",
    message: { ...json, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1, server_tool_use: { web_search_requests: 0 } } }
  }]
  blocks.forEach((block, index) => {
    if (block["type"] === "text") {
      events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } })
      events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } })
    } else if (block["type"] === "server_tool_use") {
      events.push({ type: "content_block_start", index, content_block: { ...block, input: {} } })
      events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block["input"]) } })
    } else {
      events.push({ type: "content_block_start", index, content_block: block })
    }
    events.push({ type: "content_block_stop", index })
  })
  events.push({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output_tokens, server_tool_use: usage.server_tool_use } })
  events.push({ type: "message_stop" })
  return { json, events }
}

export const startToolCallUpstream = async (): Promise<ToolCallUpstream> => {
  const requests: Array<ToolCallRequest> = []

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = parseBody(await readBody(req))
    const path = (req.url ?? "/").split("?")[0] ?? "/"
    const index = requests.length
    requests.push({ path, body })
    const format = path === "/v1/messages" ? messagesAnswer : path === "/v1/responses" ? responsesAnswer : undefined
    if (req.method !== "POST" || format === undefined || !isRecord(body)) {
      res.writeHead(404, { "content-type": "application/json" })
      return void res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `no ${req.method} ${path}` } }))
    }
    const { events, json } = format(typeof body["model"] === "string" ? body["model"] : "model", index)
    if (body["stream"] !== true) {
      res.writeHead(200, { "content-type": "application/json" })
      return void res.end(JSON.stringify(json))
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
    res.end(events.map((event) => encodeSseEvent(event, { eventLines: true })).join(""))
  }

  const server = await listenLocal((req, res) => {
    handle(req, res).catch((error: unknown) => answerApiError(res, error))
  }, "tool call upstream", { keepAlive: true })
  return {
    url: server.url,
    requests,
    close: server.close
  }
}
