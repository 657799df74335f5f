/**
 * A client's Anthropic Messages request -> the OpenAI Responses request for the same turn.
 * Pure: the door has parsed the JSON. Fields with an equivalent are mapped; fields without one
 * (context_management, cache_control, top_k, stop_sequences, service_tier, ...) are dropped without failing, as
 * Claude Code sends many of them; only real malformations are a TranslationError.
 */
import { hash } from "node:crypto"
import { Result } from "effect"
import { isRecord, reject, TranslationError } from "../error.js"
import { blocksOf, type InputPart, textOf, toolOutput, userParts } from "./blocks.js"
import { decodeThinkingSignature } from "./signature.js"

export { TranslationError } from "../error.js"

type Item = Record<string, unknown>

// ---------------------------------------------------------------------------------------------
// Messages -> input items
// ---------------------------------------------------------------------------------------------

const userMessage = (content: ReadonlyArray<InputPart>): Item => ({ type: "message", role: "user", content })

/**
 * A user turn: its tool results first (Responses wants each output right after the calls), then
 * one message with what the tools returned besides text, then the user's own content.
 */
const userItems = (content: unknown, path: string, items: Array<Item>): void => {
  const parts: Array<InputPart> = []
  const attachments: Array<InputPart> = []
  blocksOf(content, path).forEach((block, i) => {
    const at = typeof content === "string" ? path : `${path}[${i}]`
    if (block["type"] === "tool_result") {
      const out = toolOutput(block, at)
      items.push({ type: "function_call_output", call_id: out.callId, output: out.output })
      attachments.push(...out.attachments)
    } else {
      parts.push(...userParts(block, at))
    }
  })
  if (attachments.length > 0 || parts.length > 0) items.push(userMessage([...attachments, ...parts]))
}

const systemMessageText = (content: unknown, path: string): string =>
  blocksOf(content, path)
    .map((block, i) => {
      const at = typeof content === "string" ? path : `${path}[${i}]`
      return block["type"] === "text" ? textOf(block, at) : reject("system messages may only contain text", `${at}.type`)
    })
    .filter((t) => t !== "")
    .join("\n\n")

/** Assistant blocks that record server-tool activity: Responses has no item to replay them as. */
const isServerToolRecord = (type: string): boolean => type === "server_tool_use" || type.endsWith("_tool_result")

const toolUseItem = (block: Record<string, unknown>, path: string): Item => {
  const id = block["id"]
  const name = block["name"]
  if (typeof id !== "string" || id === "") return reject("tool_use blocks need a non-empty string 'id'", `${path}.id`)
  if (typeof name !== "string" || name === "") return reject("tool_use blocks need a non-empty string 'name'", `${path}.name`)
  const input = block["input"]
  return { type: "function_call", call_id: id, name, arguments: input === undefined || input === null ? "{}" : JSON.stringify(input) }
}

/**
 * An assistant turn, block by block in order: a run of text -> one message item, tool_use ->
 * function_call, a thinking block carrying our signature -> the reasoning item it encodes.
 * Thinking with a foreign signature and redacted_thinking came from another provider and cannot
 * be replayed, so they are dropped. A reasoning item with nothing after it in its turn is dropped
 * too: Responses refuses a reasoning item without the item it led to.
 */
const assistantItems = (content: unknown, path: string, items: Array<Item>): void => {
  let texts: Array<{ readonly type: "output_text"; readonly text: string }> = []
  let reasoning: Array<Item> = []
  const flushText = () => {
    if (texts.length > 0) items.push({ type: "message", role: "assistant", content: texts })
    texts = []
  }
  const flushReasoning = () => {
    if (reasoning.length > 0) items.push(...reasoning)
    reasoning = []
  }
  blocksOf(content, path).forEach((block, i) => {
    const at = typeof content === "string" ? path : `${path}[${i}]`
    const type = block["type"] as string
    switch (type) {
      case "text": {
        const text = textOf(block, at)
        if (text === "") return
        flushReasoning()
        texts.push({ type: "output_text", text })
        return
      }
      case "tool_use":
        flushText()
        flushReasoning()
        items.push(toolUseItem(block, at))
        return
      case "thinking": {
        const ref = decodeThinkingSignature(block["signature"])
        if (ref === undefined) return
        flushText()
        const thinking = typeof block["thinking"] === "string" ? block["thinking"] : ""
        reasoning.push({
          type: "reasoning",
          id: ref.id,
          encrypted_content: ref.encrypted_content,
          summary: thinking === "" ? [] : [{ type: "summary_text", text: thinking }]
        })
        return
      }
      case "redacted_thinking":
        return
      default:
        if (isServerToolRecord(type)) return
        return reject(`Assistant content block type '${type}' is not supported on this model`, `${at}.type`)
    }
  })
  flushText()
}

const inputItems = (messages: unknown): Array<Item> => {
  if (!Array.isArray(messages)) return reject("messages must be an array", "messages")
  const items: Array<Item> = []
  messages.forEach((message, i) => {
    const path = `messages[${i}]`
    if (!isRecord(message)) return reject("each message must be an object", path)
    const content = message["content"]
    switch (message["role"]) {
      case "user":
        return userItems(content, `${path}.content`, items)
      case "assistant":
        return assistantItems(content, `${path}.content`, items)
      case "system": {
        // API version 2026-10-21 allows system turns inside messages; Responses has them too.
        const text = systemMessageText(content, `${path}.content`)
        if (text !== "") items.push({ type: "message", role: "system", content: [{ type: "input_text", text }] })
        return
      }
      default:
        return reject("role must be 'user' or 'assistant'", `${path}.role`)
    }
  })
  return items
}

// ---------------------------------------------------------------------------------------------
// Everything else
// ---------------------------------------------------------------------------------------------

/** `system` -> `instructions`; cache_control and citations have no meaning there. */
const instructionsOf = (system: unknown): string | undefined => {
  if (system === undefined || system === null) return undefined
  if (typeof system === "string") return system === "" ? undefined : system
  if (!Array.isArray(system)) return reject("system must be a string or an array of text blocks", "system")
  const text = system
    .map((block, i) => {
      const path = `system[${i}]`
      if (!isRecord(block) || block["type"] !== "text") return reject("system blocks must be text blocks", path)
      return textOf(block, path)
    })
    .filter((t) => t !== "")
    .join("\n\n")
  return text === "" ? undefined : text
}

interface Tools {
  readonly tools: ReadonlyArray<Item>
  /** Names of the Anthropic server tools dropped (web_search, bash, ...): forcing one cannot work here. */
  readonly dropped: ReadonlySet<string>
}

/**
 * Client tools -> function tools. Server tools (any `type` besides "custom") run on Anthropic's
 * side and have no equivalent, so they are dropped: the model simply does not have them.
 * `strict` stays off: Anthropic schemas are not written for OpenAI's strict-mode rules.
 */
const toolsOf = (tools: unknown): Tools => {
  if (tools === undefined || tools === null) return { tools: [], dropped: new Set() }
  if (!Array.isArray(tools)) return reject("tools must be an array", "tools")
  const out: Array<Item> = []
  const dropped = new Set<string>()
  tools.forEach((tool, i) => {
    const path = `tools[${i}]`
    if (!isRecord(tool)) return reject("each tool must be an object", path)
    const name = tool["name"]
    if (typeof name !== "string" || name === "") return reject("tools need a non-empty string 'name'", `${path}.name`)
    const type = tool["type"]
    if (type !== undefined && type !== null && type !== "custom") {
      dropped.add(name)
      return
    }
    const schema = tool["input_schema"]
    if (schema !== undefined && !isRecord(schema)) return reject("input_schema must be a JSON Schema object", `${path}.input_schema`)
    out.push({
      type: "function",
      name,
      ...(typeof tool["description"] === "string" && tool["description"] !== "" ? { description: tool["description"] } : {}),
      parameters: schema ?? { type: "object", properties: {} },
      strict: false
    })
  })
  return { tools: out, dropped }
}

interface Choice {
  readonly tool_choice?: unknown
  readonly parallel_tool_calls?: false
}

const toolChoiceOf = (choice: unknown, tools: Tools): Choice => {
  if (choice === undefined || choice === null) return {}
  if (!isRecord(choice)) return reject("tool_choice must be an object", "tool_choice")
  const parallel: Choice = choice["disable_parallel_tool_use"] === true ? { parallel_tool_calls: false } : {}
  const type = choice["type"]
  if (type === "none") return tools.tools.length > 0 ? { tool_choice: "none" } : {}
  if (type === "auto") return tools.tools.length > 0 ? { tool_choice: "auto", ...parallel } : {}
  if (type === "any") {
    if (tools.tools.length === 0) {
      return reject("tool_choice 'any' needs a client tool; server tools are not available on this model", "tool_choice")
    }
    return { tool_choice: "required", ...parallel }
  }
  if (type === "tool") {
    const name = choice["name"]
    if (typeof name !== "string" || name === "") return reject("tool_choice 'tool' needs a name", "tool_choice.name")
    if (tools.dropped.has(name) && !tools.tools.some((t) => t["name"] === name)) {
      return reject(`Server tool '${name}' is not available on this model, so it cannot be forced`, "tool_choice.name")
    }
    return { tool_choice: { type: "function", name }, ...parallel }
  }
  return reject(`Unsupported tool_choice type '${String(type)}'`, "tool_choice.type")
}

type Effort = "low" | "medium" | "high"

/** Thinking budgets -> effort: under 4096 is a light think, 16384 and up a deep one. */
const effortForBudget = (budget: unknown): Effort =>
  typeof budget !== "number" ? "medium" : budget < 4096 ? "low" : budget < 16384 ? "medium" : "high"

/** `output_config.effort`; xhigh and max become high, the highest every reasoning model accepts. */
const EFFORTS: Readonly<Record<string, Effort>> = { low: "low", medium: "medium", high: "high", xhigh: "high", max: "high" }

interface Reasoning {
  readonly reasoning?: { readonly effort: Effort; readonly summary?: "auto" }
  readonly include?: ReadonlyArray<string>
}

/**
 * Thinking on -> reasoning with summaries (shown as thinking) and the encrypted content (carried
 * in the thinking signature so the next turn can replay it). A thinking type we do not know yet
 * is still thinking: treated as adaptive. `output_config.effort` alone sets the effort only.
 */
const reasoningOf = (thinking: unknown, outputConfig: unknown): Reasoning => {
  if (thinking !== undefined && thinking !== null && !isRecord(thinking)) return reject("thinking must be an object", "thinking")
  const kind = thinking?.["type"]
  const on = thinking !== undefined && thinking !== null && kind !== "disabled"
  const requested = isRecord(outputConfig) && typeof outputConfig["effort"] === "string" ? EFFORTS[outputConfig["effort"]] : undefined
  if (!on) return requested === undefined ? {} : { reasoning: { effort: requested } }
  const effort = requested ?? (kind === "enabled" ? effortForBudget(thinking["budget_tokens"]) : "medium")
  return { reasoning: { effort, summary: "auto" }, include: ["reasoning.encrypted_content"] }
}

/**
 * `output_config.format` (structured output) -> `text.format`. Not strict: OpenAI's strict mode
 * has schema rules Anthropic schemas are not written for.
 */
const textFormatOf = (outputConfig: unknown): { readonly text?: Record<string, unknown> } => {
  if (!isRecord(outputConfig) || !isRecord(outputConfig["format"])) return {}
  const format = outputConfig["format"]
  if (format["type"] !== "json_schema") return {}
  const schema = format["schema"]
  if (!isRecord(schema)) return reject("output_config.format.schema must be a JSON Schema object", "output_config.format.schema")
  return { text: { format: { type: "json_schema", name: "output", schema, strict: false } } }
}

/** Responses' smallest accepted max_output_tokens; Anthropic's 0 (cache pre-warm) has no equivalent. */
const MIN_OUTPUT_TOKENS = 16

const maxOutputTokens = (v: unknown): number | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) return reject("max_tokens must be a non-negative integer", "max_tokens")
  return Math.max(MIN_OUTPUT_TOKENS, Math.floor(v))
}

/**
 * `metadata.user_id` -> `safety_identifier`, hashed: Claude Code sends a JSON string with device
 * and session ids, longer than OpenAI accepts and not ours to pass on. The hash stays stable per user.
 */
const safetyIdentifier = (metadata: unknown): string | undefined => {
  if (!isRecord(metadata)) return undefined
  const user = metadata["user_id"]
  return typeof user === "string" && user !== "" ? hash("sha256", user, "base64url").slice(0, 32) : undefined
}

const translate = (body: Record<string, unknown>): Record<string, unknown> => {
  const stream = body["stream"]
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") return reject("stream must be a boolean", "stream")
  const instructions = instructionsOf(body["system"])
  const input = inputItems(body["messages"])
  const tools = toolsOf(body["tools"])
  const choice = toolChoiceOf(body["tool_choice"], tools)
  const reasoning = reasoningOf(body["thinking"], body["output_config"])
  const maxTokens = maxOutputTokens(body["max_tokens"])
  const textFormat = textFormatOf(body["output_config"])
  const safety = safetyIdentifier(body["metadata"])
  // stop_sequences: Responses has no stop parameter, so they are dropped; top_k likewise.
  return {
    ...(body["model"] !== undefined ? { model: body["model"] } : {}),
    ...(instructions !== undefined ? { instructions } : {}),
    input,
    stream: stream === true,
    store: false,
    ...(tools.tools.length > 0 ? { tools: tools.tools } : {}),
    ...choice,
    ...reasoning,
    ...textFormat,
    ...(maxTokens !== undefined ? { max_output_tokens: maxTokens } : {}),
    ...(typeof body["temperature"] === "number" ? { temperature: body["temperature"] } : {}),
    ...(typeof body["top_p"] === "number" ? { top_p: body["top_p"] } : {}),
    ...(safety !== undefined ? { safety_identifier: safety } : {})
  }
}

export const messagesToResponses = (body: Record<string, unknown>): Result.Result<Record<string, unknown>, TranslationError> => {
  try {
    return Result.succeed(translate(body))
  } catch (e) {
    if (e instanceof TranslationError) return Result.fail(e)
    throw e
  }
}
