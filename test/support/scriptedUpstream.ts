/**
 * A `node:http` fake of the Anthropic Messages and OpenAI Responses upstreams whose answers a test
 * scripts (a given text, a given tool call, an error status), for clients such as Claude Code that
 * act on what the model says: the simulator behind fakeUpstream.ts answers every request that has
 * tools with a call to the first tool, with sampled arguments, which an agent would run.
 * Every request is recorded with its path, query, headers and parsed body.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import type { IncomingMessage, ServerResponse } from "node:http"
import { encodeSseEvent } from "../../src/services/upstream/simulator/sse.js"
import { answerApiError, listenLocal } from "./localServer.js"
import { parseBody, readBody } from "./requestBody.js"

export interface ScriptedRequest {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: unknown
}

export type ScriptedAnswer =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly name: string; readonly input: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Status"; readonly status: number; readonly body: unknown }

export type Script = (request: ScriptedRequest, index: number) => ScriptedAnswer

export interface ScriptedUpstream {
  readonly url: string
  readonly requests: ReadonlyArray<ScriptedRequest>
  readonly setScript: (script: Script) => void
  readonly close: () => Promise<void>
}

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content
    .map((part: unknown) => (isRecord(part) && typeof part["text"] === "string" ? part["text"] : ""))
    .join("")
}

/**
 * What the client sent back from the tools it ran: the `tool_result` blocks of a Messages body or
 * the `function_call_output` items of a Responses body, joined; undefined when there are none.
 */
export const toolOutputs = (body: unknown): string | undefined => {
  if (!isRecord(body)) return undefined
  const outputs: Array<string> = []
  for (const message of Array.isArray(body["messages"]) ? body["messages"] : []) {
    if (!isRecord(message) || !Array.isArray(message["content"])) continue
    for (const block of message["content"]) {
      if (isRecord(block) && block["type"] === "tool_result") outputs.push(textOf(block["content"]))
    }
  }
  for (const item of Array.isArray(body["input"]) ? body["input"] : []) {
    if (isRecord(item) && item["type"] === "function_call_output") outputs.push(textOf(item["output"]))
  }
  return outputs.length > 0 ? outputs.join("\n") : undefined
}

const usage = { input_tokens: 12, output_tokens: 7 }

const messagesAnswer = (model: string, answer: ScriptedAnswer, n: number): { readonly json: Json; readonly events: ReadonlyArray<Json> } => {
  const id = `msg_scripted_${n}`
  const block: Json = answer._tag === "ToolCall"
    ? { type: "tool_use", id: `toolu_scripted_${n}`, name: answer.name, input: answer.input }
    : { type: "text", text: answer._tag === "Text" ? answer.text : "" }
  const stopReason = answer._tag === "ToolCall" ? "tool_use" : "end_turn"
  const json: Json = {
    id,
    type: "message",
    role: "assistant",
    model,
    content: [block],
    stop_reason: stopReason,
    stop_sequence: null,
    usage
  }
  const delta: Json = answer._tag === "ToolCall"
    ? { type: "input_json_delta", partial_json: JSON.stringify(answer.input) }
    : { type: "text_delta", text: block["text"] }
  const events: Array<Json> = [
    { type: "message_start", message: { ...json, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } },
    { type: "ping" },
    { type: "content_block_start", index: 0, content_block: answer._tag === "ToolCall" ? { ...block, input: {} } : { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } },
    { type: "message_stop" }
  ]
  return { json, events }
}

const responsesAnswer = (model: string, answer: ScriptedAnswer, n: number): { readonly json: Json; readonly events: ReadonlyArray<Json> } => {
  const base: Json = responseObject({ id: `resp_scripted_${n}`, model, createdAt: 1_700_000_000, status: "in_progress" })
  const item: Json = answer._tag === "ToolCall"
    ? { id: `fc_scripted_${n}`, type: "function_call", status: "completed", call_id: `call_scripted_${n}`, name: answer.name, arguments: JSON.stringify(answer.input) }
    : {
      id: `msg_scripted_${n}`,
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: answer._tag === "Text" ? answer.text : "", annotations: [] }]
    }
  const json: Json = {
    ...base,
    status: "completed",
    output: [item],
    usage: { input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 19 }
  }
  const events: Array<Json> = []
  const emit = (type: string, fields: Json): void => {
    events.push({ type, sequence_number: events.length, ...fields })
  }
  emit("response.created", { response: base })
  emit("response.in_progress", { response: base })
  if (item["type"] === "function_call") {
    const where = { item_id: item["id"], output_index: 0 }
    emit("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", arguments: "" } })
    emit("response.function_call_arguments.delta", { ...where, delta: item["arguments"] })
    emit("response.function_call_arguments.done", { ...where, name: item["name"], arguments: item["arguments"] })
  } else {
    const text = answer._tag === "Text" ? answer.text : ""
    const where = { item_id: item["id"], output_index: 0, content_index: 0 }
    const part = (t: string): Json => ({ type: "output_text", text: t, annotations: [] })
    emit("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } })
    emit("response.content_part.added", { ...where, part: part("") })
    emit("response.output_text.delta", { ...where, delta: text })
    emit("response.output_text.done", { ...where, text })
    emit("response.content_part.done", { ...where, part: part(text) })
  }
  emit("response.output_item.done", { output_index: 0, item })
  emit("response.completed", { response: json })
  return { json, events }
}



export const startScriptedUpstream = async (script: Script = () => ({ _tag: "Text", text: "scripted answer" })): Promise<ScriptedUpstream> => {
  const requests: Array<ScriptedRequest> = []
  let current = script

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = parseBody(await readBody(req))
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const request: ScriptedRequest = {
      method: req.method ?? "GET",
      path: q === -1 ? url : url.slice(0, q),
      query: q === -1 ? "" : url.slice(q + 1),
      headers: { ...req.headers },
      body
    }
    const index = requests.length
    requests.push(request)
    const sendJson = (status: number, payload: unknown): void => {
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_scripted_${index}` })
      res.end(JSON.stringify(payload))
    }
    const format = request.method !== "POST"
      ? undefined
      : request.path === "/v1/messages"
        ? messagesAnswer
        : request.path === "/v1/responses"
          ? responsesAnswer
          : undefined
    if (format === undefined || !isRecord(body)) {
      return sendJson(404, { type: "error", error: { type: "not_found_error", message: `scripted upstream: no ${request.method} ${request.path}` } })
    }
    const answer = current(request, index)
    if (answer._tag === "Status") return sendJson(answer.status, answer.body)
    const { events, json } = format(typeof body["model"] === "string" ? body["model"] : "scripted", answer, index)
    if (body["stream"] !== true) return sendJson(200, json)
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "request-id": `req_scripted_${index}` })
    res.end(events.map((event) => encodeSseEvent(event, { eventLines: true })).join(""))
  }

  const server = await listenLocal((req, res) => {
    handle(req, res).catch((error: unknown) => answerApiError(res, error))
  }, "scripted upstream", { keepAlive: true })
  return {
    url: server.url,
    requests,
    setScript: (next) => {
      current = next
    },
    close: server.close
  }
}
