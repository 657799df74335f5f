/**
 * Shared by the Messages-door translation tests: a Responses stream builder (the event sequence
 * OpenAI sends for a list of output items), the Anthropic stream grammar, and the Anthropic SDK as
 * the oracle that accumulates our events into a message.
 */
import Anthropic from "@anthropic-ai/sdk"
import { encodeEvent } from "../../../src/domain/sse.js"
import { MessagesStreamTranslator, type StreamEnding } from "../../../src/translate/messages/stream.js"
import type { AnthropicStreamEventOut } from "../../../src/translate/messages/types.js"

export type Ev = Record<string, unknown>

// ---------------------------------------------------------------------------------------------
// Responses streams
// ---------------------------------------------------------------------------------------------

export type OutItem =
  | { readonly kind: "message"; readonly parts: ReadonlyArray<ReadonlyArray<string>> }
  | {
    readonly kind: "reasoning"
    readonly id: string
    readonly summary: ReadonlyArray<ReadonlyArray<string>>
    readonly encrypted?: string
  }
  | { readonly kind: "call"; readonly id: string; readonly callId: string; readonly name: string; readonly pieces: ReadonlyArray<string> }

export type Ending =
  | { readonly kind: "completed" }
  | { readonly kind: "incomplete"; readonly reason: "max_output_tokens" | "content_filter" }
  | { readonly kind: "failed"; readonly code: string; readonly message: string }
  | { readonly kind: "error"; readonly code: string; readonly message: string }
  | { readonly kind: "cut" }

export const USAGE = {
  input_tokens: 1200,
  input_tokens_details: { cached_tokens: 1000 },
  output_tokens: 85,
  output_tokens_details: { reasoning_tokens: 40 },
  total_tokens: 1285
}

const response = (id: string, status: string, output: ReadonlyArray<Ev>, extra: Ev = {}): Ev => ({
  id,
  object: "response",
  created_at: 1795640788,
  status,
  model: "gpt-5.4",
  output,
  usage: status === "in_progress" ? null : USAGE,
  error: null,
  incomplete_details: null,
  ...extra
})

/** Every event OpenAI sends for these items, in order, with sequence numbers; `cutAt` drops the rest. */
export const responsesStream = (items: ReadonlyArray<OutItem>, ending: Ending, responseId = "resp_0a1b2c"): Array<Ev> => {
  const events: Array<Ev> = []
  const emit = (type: string, payload: Ev) => events.push({ type, sequence_number: events.length, ...payload })
  emit("response.created", { response: response(responseId, "in_progress", []) })
  emit("response.in_progress", { response: response(responseId, "in_progress", []) })
  const done: Array<Ev> = []
  items.forEach((item, output_index) => {
    if (item.kind === "message") {
      const id = `msg_${output_index}`
      emit("response.output_item.added", { output_index, item: { id, type: "message", status: "in_progress", role: "assistant", content: [] } })
      const texts = item.parts.map((pieces, content_index) => {
        const at = { item_id: id, output_index, content_index }
        emit("response.content_part.added", { ...at, part: { type: "output_text", text: "", annotations: [] } })
        for (const delta of pieces) emit("response.output_text.delta", { ...at, delta, logprobs: [] })
        const text = pieces.join("")
        emit("response.output_text.done", { ...at, text, logprobs: [] })
        emit("response.content_part.done", { ...at, part: { type: "output_text", text, annotations: [] } })
        return { type: "output_text", text, annotations: [] }
      })
      const full = { id, type: "message", status: "completed", role: "assistant", content: texts }
      emit("response.output_item.done", { output_index, item: full })
      done.push(full)
    } else if (item.kind === "reasoning") {
      emit("response.output_item.added", { output_index, item: { id: item.id, type: "reasoning", summary: [] } })
      const summary = item.summary.map((pieces, summary_index) => {
        const at = { item_id: item.id, output_index, summary_index }
        emit("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } })
        for (const delta of pieces) emit("response.reasoning_summary_text.delta", { ...at, delta })
        const text = pieces.join("")
        emit("response.reasoning_summary_text.done", { ...at, text })
        emit("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text } })
        return { type: "summary_text", text }
      })
      const full = { id: item.id, type: "reasoning", summary, ...(item.encrypted !== undefined ? { encrypted_content: item.encrypted } : {}) }
      emit("response.output_item.done", { output_index, item: full })
      done.push(full)
    } else {
      const base = { id: item.id, type: "function_call", call_id: item.callId, name: item.name }
      emit("response.output_item.added", { output_index, item: { ...base, status: "in_progress", arguments: "" } })
      for (const delta of item.pieces) emit("response.function_call_arguments.delta", { item_id: item.id, output_index, delta })
      const args = item.pieces.join("")
      emit("response.function_call_arguments.done", { item_id: item.id, output_index, arguments: args })
      const full = { ...base, status: "completed", arguments: args }
      emit("response.output_item.done", { output_index, item: full })
      done.push(full)
    }
  })
  switch (ending.kind) {
    case "completed":
      emit("response.completed", { response: response(responseId, "completed", done) })
      break
    case "incomplete":
      emit("response.incomplete", { response: response(responseId, "incomplete", done, { incomplete_details: { reason: ending.reason } }) })
      break
    case "failed":
      emit("response.failed", { response: response(responseId, "failed", done, { error: { code: ending.code, message: ending.message } }) })
      break
    case "error":
      emit("error", { code: ending.code, message: ending.message, param: null })
      break
    case "cut":
      break
  }
  return events
}

// ---------------------------------------------------------------------------------------------
// Running the translator
// ---------------------------------------------------------------------------------------------

export const translate = (
  events: ReadonlyArray<Ev>,
  ending: StreamEnding = { _tag: "Eof" }
): { readonly out: Array<AnthropicStreamEventOut>; readonly translator: MessagesStreamTranslator } => {
  const translator = new MessagesStreamTranslator({ model: "claude-sonnet-4-5" })
  const out: Array<AnthropicStreamEventOut> = []
  for (const e of events) out.push(...translator.step(e))
  out.push(...translator.finish(ending))
  return { out, translator }
}

export const toSse = (events: ReadonlyArray<AnthropicStreamEventOut>): string => events.map(encodeEvent).join("")

// ---------------------------------------------------------------------------------------------
// The grammar
// ---------------------------------------------------------------------------------------------

const DELTA_FOR: Readonly<Record<string, string>> = {
  text_delta: "text",
  thinking_delta: "thinking",
  signature_delta: "thinking",
  input_json_delta: "tool_use"
}

/**
 * The violations of the Anthropic stream grammar in `events` (empty when it holds): message_start
 * first; blocks one at a time with indexes 0, 1, ...; deltas of the open block's kind; a signature
 * only as a thinking block's last delta; then message_delta and message_stop with every block
 * stopped, or an `error` as the very last event.
 */
export const grammarViolations = (events: ReadonlyArray<Record<string, unknown>>): Array<string> => {
  const bad: Array<string> = []
  let open: { index: number; kind: string; signed: boolean } | undefined
  let next = 0
  let sawDelta = false
  let ended = false
  events.forEach((e, i) => {
    const at = `#${i} ${String(e["type"])}`
    if (typeof e["type"] !== "string") bad.push(`#${i} has no type`)
    if (ended) bad.push(`${at} after the end`)
    if (i === 0 && e["type"] !== "message_start") bad.push(`${at}: message_start must come first`)
    switch (e["type"]) {
      case "message_start":
        if (i !== 0) bad.push(`${at}: a second message_start`)
        break
      case "content_block_start": {
        if (open !== undefined) bad.push(`${at}: block ${open.index} still open`)
        if (sawDelta) bad.push(`${at}: after message_delta`)
        if (e["index"] !== next) bad.push(`${at}: index ${String(e["index"])}, expected ${next}`)
        const block = e["content_block"] as Record<string, unknown>
        open = { index: next, kind: String(block["type"]), signed: false }
        next += 1
        break
      }
      case "content_block_delta": {
        const delta = e["delta"] as Record<string, unknown>
        if (open === undefined || e["index"] !== open.index) bad.push(`${at}: index ${String(e["index"])} is not open`)
        else if (DELTA_FOR[String(delta["type"])] !== open.kind) bad.push(`${at}: ${String(delta["type"])} in a ${open.kind} block`)
        else if (open.signed) bad.push(`${at}: delta after the signature`)
        else if (delta["type"] === "signature_delta") open.signed = true
        break
      }
      case "content_block_stop":
        if (open === undefined || e["index"] !== open.index) bad.push(`${at}: index ${String(e["index"])} is not open`)
        open = undefined
        break
      case "message_delta": {
        if (open !== undefined) bad.push(`${at}: block ${open.index} still open`)
        if (sawDelta) bad.push(`${at}: a second message_delta`)
        sawDelta = true
        const usage = e["usage"] as Record<string, unknown>
        for (const k of ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]) {
          if (typeof usage[k] !== "number") bad.push(`${at}: usage.${k} missing`)
        }
        break
      }
      case "message_stop":
        if (!sawDelta) bad.push(`${at}: no message_delta before it`)
        ended = true
        break
      case "error":
        ended = true
        break
      case "ping":
        break
      default:
        bad.push(`${at}: unknown event type`)
    }
  })
  if (!ended) bad.push("the stream has neither message_stop nor error at its end")
  return bad
}

// ---------------------------------------------------------------------------------------------
// The Anthropic SDK as the oracle
// ---------------------------------------------------------------------------------------------

const clientServing = (sse: string) =>
  new Anthropic({
    apiKey: "sk-ant-test",
    baseURL: "http://gateway.test",
    maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } })
  })

/** What `messages.stream()` makes of our events: its final message, or the error it threw. */
export const sdkAccumulate = async (
  events: ReadonlyArray<AnthropicStreamEventOut>
): Promise<{ readonly message: Anthropic.Message } | { readonly error: Error }> => {
  const stream = clientServing(toSse(events)).messages.stream({
    // Any model name: the SDK warns on stderr for its deprecated ones.
    model: "gpt-5.4",
    max_tokens: 1024,
    messages: [{ role: "user", content: "hi" }]
  })
  try {
    return { message: await stream.finalMessage() }
  } catch (error) {
    return { error: error as Error }
  }
}
