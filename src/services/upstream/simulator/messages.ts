/**
 * A deterministic stand-in for the Anthropic Messages API (protocols.md 2.2-2.4).
 *
 * Given a `POST /v1/messages` body it produces both the non-streaming `Message` and the exact SSE
 * event sequence. Behaviour:
 * - `thinking` enabled (`enabled` or `adaptive`): a thinking block first (thinking_delta pieces,
 *   then one signature_delta);
 * - the last message is a user message without a `tool_result` whose prompt asks for one of the
 *   tools (toolIntent.ts), or `tool_choice` names one or is `any`: a `tool_use` block, input drawn
 *   from the prompt and shaped to its `input_schema`, streamed as input_json_delta pieces;
 *   stop_reason `tool_use`;
 * - otherwise a text block (quoting the tool result when the last user message carries one, or a
 *   value of the `output_config.format` JSON schema); `end_turn`;
 * - when `max_tokens` is below the answer's estimate, the output is cut to fit and stop_reason is
 *   `max_tokens` (a tool_use that does not fit is replaced by the truncated text answer, so the
 *   content never holds half a tool input).
 * Usage: ceil(chars / 4). When the request carries any `cache_control`, the system prompt's tokens
 * are reported as `cache_read_input_tokens` (and left out of `input_tokens`, as Anthropic does).
 */
import {
  answerText,
  asArray,
  asNumber,
  asString,
  contentText,
  estimateTokens,
  evenChunks,
  hashBase64,
  idFactory,
  requestSeed,
  isRecord,
  sampleFromSchema,
  type JsonObject,
  serialise,
  type Simulated,
  type SimulateOptions,
  snippet,
  toolResultAnswerText,
  wordChunks
} from "./shared.js"
import { stripContext } from "./prompt.js"
import { type OfferedTool, plannedCall, type ToolChoice } from "./toolIntent.js"

type Block =
  | { readonly _tag: "Thinking"; readonly thinking: string; readonly signature: string }
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "ToolUse"; readonly id: string; readonly name: string; readonly input: JsonObject }

interface LastMessage {
  readonly lastUserText: string
  readonly lastIsUser: boolean
  readonly toolResult: string | undefined
}

const viewMessages = (messages: unknown): LastMessage => {
  // Claude Code sends its environment as a `system` message after the prompt: context, not a turn.
  const list = asArray(messages).filter(isRecord).filter((m) => m["role"] !== "system")
  let lastUserText = ""
  for (let i = list.length - 1; i >= 0; i--) {
    const m = list[i]
    if (m === undefined || m["role"] !== "user") continue
    const content = m["content"]
    const text = typeof content === "string"
      ? content
      : contentText(asArray(content).filter((b) => isRecord(b) && b["type"] === "text"))
    if (text.length > 0) {
      lastUserText = text
      break
    }
  }
  const last = list[list.length - 1]
  if (last === undefined || last["role"] !== "user") return { lastUserText, lastIsUser: false, toolResult: undefined }
  const results = asArray(last["content"]).filter((b) => isRecord(b) && b["type"] === "tool_result")
  return {
    lastUserText,
    lastIsUser: true,
    toolResult: results.length > 0 ? contentText(results) : undefined
  }
}

const offeredTools = (body: JsonObject): ReadonlyArray<OfferedTool> =>
  asArray(body["tools"])
    .filter(isRecord)
    .flatMap((t) =>
      typeof t["name"] === "string" && isRecord(t["input_schema"]) && (t["type"] === undefined || t["type"] === "custom")
        ? [{ name: t["name"], schema: t["input_schema"] }]
        : []
    )

/** `tool_choice`, or undefined for `none`. */
const toolChoice = (body: JsonObject): ToolChoice | undefined => {
  const choice = body["tool_choice"]
  if (!isRecord(choice)) return { _tag: "Auto" }
  if (choice["type"] === "none") return undefined
  if (choice["type"] === "any") return { _tag: "Required" }
  if (choice["type"] === "tool" && typeof choice["name"] === "string") return { _tag: "Named", name: choice["name"] }
  return { _tag: "Auto" }
}

const thinkingEnabled = (body: JsonObject): boolean => {
  const thinking = body["thinking"]
  return isRecord(thinking) && (thinking["type"] === "enabled" || thinking["type"] === "adaptive")
}

const blockTokens = (block: Block): number => {
  switch (block._tag) {
    case "Thinking":
      return estimateTokens(block.thinking)
    case "Text":
      return estimateTokens(block.text)
    case "ToolUse":
      return estimateTokens(JSON.stringify(block.input))
  }
}

export const simulateMessages = (body: Record<string, unknown>, options: SimulateOptions = {}): Simulated => {
  const nextId = idFactory(requestSeed(body), options.randomIds === true)
  const messageId = nextId("msg")
  const model = asString(body["model"]) ?? "simulator"
  const view = viewMessages(body["messages"])
  const prompt = stripContext(view.lastUserText)
  const choice = toolChoice(body)
  const call = view.lastIsUser && view.toolResult === undefined && choice !== undefined
    ? plannedCall(prompt, offeredTools(body), choice)
    : undefined

  const plainAnswer = view.toolResult !== undefined ? toolResultAnswerText(view.toolResult) : answerText(prompt)
  // Structured output (`output_config.format`): a JSON value of the schema, as the model must answer.
  const outputConfig = isRecord(body["output_config"]) ? body["output_config"] : {}
  const format = isRecord(outputConfig["format"]) ? outputConfig["format"] : undefined
  const textAnswer = format?.["type"] === "json_schema" ? JSON.stringify(sampleFromSchema(format["schema"])) : plainAnswer
  const answer: Block = call !== undefined
    ? { _tag: "ToolUse", id: nextId("toolu"), name: call.name, input: call.input }
    : { _tag: "Text", text: textAnswer }

  const planned: Array<Block> = []
  if (thinkingEnabled(body)) {
    const intent = answer._tag === "ToolUse" ? `call the tool ${answer.name}` : "answer directly"
    const thinking = `The user asked: "${snippet(view.toolResult ?? prompt) || "(empty)"}". A simulated model would think it over and ${intent}.`
    planned.push({ _tag: "Thinking", thinking, signature: hashBase64(`${model}:${thinking}`) })
  }
  planned.push(answer)

  // Fit the blocks into max_tokens.
  const maxTokens = asNumber(body["max_tokens"])
  let budget = maxTokens === undefined ? Number.POSITIVE_INFINITY : Math.max(0, Math.floor(maxTokens))
  let truncated = false
  const blocks: Array<Block> = []
  for (const block of planned) {
    const need = blockTokens(block)
    if (need <= budget) {
      blocks.push(block)
      budget -= need
      continue
    }
    truncated = true
    const chars = budget * 4
    if (chars > 0) {
      if (block._tag === "Thinking") blocks.push({ ...block, thinking: block.thinking.slice(0, chars) })
      else blocks.push({ _tag: "Text", text: textAnswer.slice(0, chars) })
    }
    break
  }

  const outputTokens = blocks.reduce((n, b) => n + blockTokens(b), 0)
  const thinkingTokens = blocks.reduce((n, b) => n + (b._tag === "Thinking" ? blockTokens(b) : 0), 0)
  const stopReason = truncated ? "max_tokens" : blocks.some((b) => b._tag === "ToolUse") ? "tool_use" : "end_turn"

  const allInput = serialise(body["system"] ?? "") + serialise(body["messages"] ?? []) + serialise(body["tools"] ?? [])
  const totalInput = Math.max(1, estimateTokens(allInput))
  const usesCache = serialise(body).includes('"cache_control"')
  const systemTokens = estimateTokens(typeof body["system"] === "string" ? body["system"] : contentText(body["system"]))
  const cacheRead = usesCache ? Math.min(systemTokens, totalInput - 1) : 0
  const inputTokens = totalInput - cacheRead

  const finalBlock = (block: Block): JsonObject => {
    switch (block._tag) {
      case "Thinking":
        return { type: "thinking", thinking: block.thinking, signature: block.signature }
      case "Text":
        return { type: "text", text: block.text, citations: null }
      case "ToolUse":
        return { type: "tool_use", id: block.id, name: block.name, input: block.input }
    }
  }

  const json: JsonObject = {
    id: messageId,
    type: "message",
    role: "assistant",
    model,
    content: blocks.map(finalBlock),
    stop_reason: stopReason,
    stop_sequence: null,
    stop_details: null,
    usage: {
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: cacheRead,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens_details: { thinking_tokens: thinkingTokens },
      server_tool_use: null,
      service_tier: "standard"
    }
  }

  const events: Array<JsonObject> = []
  events.push({
    type: "message_start",
    message: {
      id: messageId,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: inputTokens,
        output_tokens: Math.min(1, outputTokens),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cacheRead,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        service_tier: "standard"
      }
    }
  })
  events.push({ type: "ping" })
  blocks.forEach((block, index) => {
    const delta = (d: JsonObject): void => {
      events.push({ type: "content_block_delta", index, delta: d })
    }
    switch (block._tag) {
      case "Thinking":
        events.push({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } })
        for (const piece of wordChunks(block.thinking, 4)) delta({ type: "thinking_delta", thinking: piece })
        delta({ type: "signature_delta", signature: block.signature })
        break
      case "Text":
        events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } })
        for (const piece of wordChunks(block.text)) delta({ type: "text_delta", text: piece })
        break
      case "ToolUse":
        events.push({ type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } })
        for (const piece of evenChunks(JSON.stringify(block.input), 3)) delta({ type: "input_json_delta", partial_json: piece })
        break
    }
    events.push({ type: "content_block_stop", index })
  })
  events.push({
    type: "message_delta",
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: {
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: cacheRead,
      output_tokens_details: { thinking_tokens: thinkingTokens }
    }
  })
  events.push({ type: "message_stop" })

  return { json, events }
}
