/**
 * A `node:http` fake of an OpenAI-compatible Chat Completions server (vLLM, Ollama, DeepSeek), on
 * the real wire format: `POST /v1/chat/completions`, JSON or SSE (`data:` lines only, a first
 * chunk with the role, `reasoning_content` and `content` deltas, each tool call opened with its
 * id and name then its arguments in pieces, the finish reason, the usage chunk when
 * `stream_options.include_usage` asks, `data: [DONE]`), errors as `{"error": {...}}` with the
 * status. What it answers is the test's `script`; by default: a call of the first offered tool
 * the last user message names (or is about: a word of its name), the tool's output quoted back
 * after a tool message, else a greeting.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { listenLocal } from "./localServer.js"
import { parseBody, readBody } from "./requestBody.js"

type Json = Record<string, unknown>

export interface ChatToolCall {
  readonly name: string
  /** The arguments as JSON text, as a server streams them. */
  readonly arguments: string
}

export type ChatAnswer =
  | { readonly _tag: "Answer"; readonly text: string; readonly reasoning?: string; readonly calls?: ReadonlyArray<ChatToolCall>; readonly finish?: "stop" | "length" | "tool_calls" }
  | { readonly _tag: "Error"; readonly status: number; readonly message: string }

export interface ChatUpstream {
  readonly url: string
  /** Every request's parsed body and its headers, in order. */
  readonly requests: ReadonlyArray<{ readonly body: Json; readonly headers: IncomingMessage["headers"] }>
  readonly close: () => Promise<void>
}

export const USAGE = { prompt_tokens: 42, completion_tokens: 17, cached: 30 }

export const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** A message's text, from a string or text parts. */
export const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((p) => (isRecord(p) && typeof p["text"] === "string" ? p["text"] : "")).join("")
    : ""

/** The default script: the behaviour of a small tool-calling model. */
export const defaultScript = (body: Json): ChatAnswer => {
  const messages: ReadonlyArray<unknown> = Array.isArray(body["messages"]) ? body["messages"] : []
  const last = messages.at(-1)
  if (isRecord(last) && last["role"] === "tool") return { _tag: "Answer", text: `The tool said: ${textOf(last["content"])}` }
  const user = [...messages].reverse().find((m) => isRecord(m) && m["role"] === "user")
  const said = isRecord(user) ? textOf(user["content"]) : ""
  const tools: ReadonlyArray<unknown> = Array.isArray(body["tools"]) ? body["tools"] : []
  for (const tool of tools) {
    const fn = isRecord(tool) && isRecord(tool["function"]) ? tool["function"] : undefined
    const name = fn !== undefined && typeof fn["name"] === "string" ? fn["name"] : undefined
    // Named, or about a word of its name ("weather" for get_weather), as a small model would take it.
    const about = name?.split(/[_\-.]+/).some((word) => word.length >= 4 && said.toLowerCase().includes(word.toLowerCase()))
    if (name === undefined || !(said.includes(name) || about === true)) continue
    const props = fn !== undefined && isRecord(fn["parameters"]) && isRecord(fn["parameters"]["properties"]) ? fn["parameters"]["properties"] : {}
    const quoted = /`([^`]+)`/.exec(said)?.[1] ?? "Paris"
    const args = Object.fromEntries(Object.keys(props).slice(0, 1).map((k) => [k, quoted]))
    return { _tag: "Answer", text: "", reasoning: "I should call the tool.", calls: [{ name, arguments: JSON.stringify(args) }] }
  }
  return { _tag: "Answer", text: "Hello from the chat server!", reasoning: "Greet." }
}

const usageOf = () => ({
  prompt_tokens: USAGE.prompt_tokens,
  completion_tokens: USAGE.completion_tokens,
  total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens,
  prompt_tokens_details: { cached_tokens: USAGE.cached }
})

const pieces = (s: string): Array<string> => (s === "" ? [] : s.match(/.{1,5}/gs) ?? [])

export const startChatUpstream = async (script: (body: Json, n: number) => ChatAnswer = defaultScript): Promise<ChatUpstream> => {
  const requests: Array<{ body: Json; headers: IncomingMessage["headers"] }> = []
  let n = 0
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const parsed = parseBody(await readBody(req))
    const body = isRecord(parsed) ? parsed : {}
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404, { "content-type": "application/json" })
      return void res.end(JSON.stringify({ error: { message: "Not found", type: "invalid_request_error", param: null, code: null } }))
    }
    requests.push({ body, headers: req.headers })
    const answer = script(body, n++)
    if (answer._tag === "Error") {
      res.writeHead(answer.status, { "content-type": "application/json" })
      return void res.end(JSON.stringify({ error: { message: answer.message, type: "server_error", param: null, code: null } }))
    }
    const id = `chatcmpl-fake${n}`
    const model = typeof body["model"] === "string" ? body["model"] : "unknown"
    const calls = (answer.calls ?? []).map((c, i) => ({ id: `call_fake${n}_${i}`, type: "function", function: { name: c.name, arguments: c.arguments } }))
    const finish = answer.finish ?? (calls.length > 0 ? "tool_calls" : "stop")
    if (body["stream"] !== true) {
      res.writeHead(200, { "content-type": "application/json" })
      return void res.end(JSON.stringify({
        id, object: "chat.completion", created: 1_795_640_788, model,
        choices: [{
          index: 0, logprobs: null, finish_reason: finish,
          message: {
            role: "assistant", content: answer.text === "" ? null : answer.text,
            ...(answer.reasoning !== undefined ? { reasoning_content: answer.reasoning } : {}),
            ...(calls.length > 0 ? { tool_calls: calls } : {})
          }
        }],
        usage: usageOf()
      }))
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const chunk = (delta: Json, finishReason: string | null = null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1_795_640_788, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`
    res.write(chunk({ role: "assistant", content: "" }))
    for (const p of pieces(answer.reasoning ?? "")) res.write(chunk({ reasoning_content: p }))
    for (const p of pieces(answer.text)) res.write(chunk({ content: p }))
    calls.forEach((call, index) => {
      res.write(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }))
      for (const p of pieces(call.function.arguments)) res.write(chunk({ tool_calls: [{ index, function: { arguments: p } }] }))
    })
    res.write(chunk({}, finish))
    const options = body["stream_options"]
    if (isRecord(options) && options["include_usage"] === true) {
      res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1_795_640_788, model, choices: [], usage: usageOf() })}\n\n`)
    }
    res.end("data: [DONE]\n\n")
  }
  const server = await listenLocal((req, res) => void handler(req, res), "chat upstream")
  return { url: server.url, requests, close: server.close }
}
