/**
 * A Responses request -> the Chat Completions request an OpenAI-compatible server (vLLM, Ollama,
 * llama.cpp, DeepSeek, OpenRouter...) takes for the same turn.
 *
 * Tools go through the same lowering as the Anthropic translation (`../tools.ts`: namespaces
 * joined, custom tools as one-string functions, hosted web search dropped), so names restore the
 * same way on the way back. Reasoning items are not replayed: Chat has no field for them, and the
 * servers that stream `reasoning_content` refuse it in history. Streams always ask for usage.
 */
import { Result } from "effect"
import { partsOf, textOf } from "../content.js"
import { isRecord, reject, TranslationError } from "../error.js"
import { compactedText } from "../history.js"
import { upstreamToolName } from "../names.js"
import { selectTools, translateTools } from "../tools.js"
import type { AnthropicTool, AnthropicToolChoice } from "../types.js"

export { TranslationError } from "../error.js"

type Message = Record<string, unknown>

export interface ChatTranslateOptions {
  /** The model name the account's server knows (after the account's `model_mapping`). */
  readonly upstreamModel: string
}

const userPart = (part: Record<string, unknown>, path: string): Record<string, unknown> | undefined => {
  const text = textOf(part, path)
  if (text !== undefined) return text === "" ? undefined : { type: "text", text }
  switch (part["type"]) {
    case "input_image": {
      const raw = part["image_url"]
      const url = typeof raw === "string" ? raw : isRecord(raw) && typeof raw["url"] === "string" ? raw["url"] : undefined
      if (url === undefined || url === "") return reject("input_image needs an image_url (file_id is not supported here)", `${path}.image_url`)
      const detail = part["detail"]
      return { type: "image_url", image_url: { url, ...(detail === "low" || detail === "high" ? { detail } : {}) } }
    }
    case "input_file": {
      const data = part["file_data"]
      if (typeof data !== "string" || data === "") return reject("input_file needs file_data here", `${path}.file_data`)
      return { type: "file", file: { file_data: data, ...(typeof part["filename"] === "string" ? { filename: part["filename"] } : {}) } }
    }
    default:
      return reject(`Unsupported content part type '${String(part["type"])}'`, `${path}.type`)
  }
}

/** Text-only content (system, assistant, tool output) joined; Chat servers differ on part arrays there. */
const plainText = (content: unknown, path: string): string =>
  partsOf(content, path)
    .map((part, i) => textOf(part, `${path}[${i}]`) ?? reject("only text is supported here", `${path}[${i}].type`))
    .join("")

const toolOutput = (output: unknown, path: string): string =>
  typeof output === "string" ? output : plainText(output, path)

/**
 * Walks the input in order. Consecutive calls join the assistant message before them (Chat wants
 * one assistant message carrying all the calls its tool messages answer).
 */
const messagesOf = (input: unknown, system: Array<string>): Array<Message> => {
  const messages: Array<Message> = []
  let assistant: { content: string; calls: Array<Record<string, unknown>> } | undefined
  const flush = () => {
    if (assistant === undefined) return
    messages.push({
      role: "assistant",
      content: assistant.content === "" ? null : assistant.content,
      ...(assistant.calls.length > 0 ? { tool_calls: assistant.calls } : {})
    })
    assistant = undefined
  }
  const call = (id: string, name: string, args: string) => {
    assistant ??= { content: "", calls: [] }
    assistant.calls.push({ id, type: "function", function: { name, arguments: args } })
  }
  const items: ReadonlyArray<unknown> = typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : input === undefined || input === null
    ? []
    : reject("input must be a string or an array of items", "input")
  items.forEach((raw, i) => {
    const path = `input[${i}]`
    if (!isRecord(raw)) return reject("each input item must be an object", path)
    const type = raw["type"] ?? (typeof raw["role"] === "string" ? "message" : undefined)
    switch (type) {
      case "message": {
        const role = raw["role"]
        if (role === "system" || role === "developer") {
          const text = plainText(raw["content"], `${path}.content`)
          if (text !== "") system.push(text)
        } else if (role === "assistant") {
          const text = plainText(raw["content"], `${path}.content`)
          if (assistant !== undefined && assistant.calls.length > 0) flush()
          assistant ??= { content: "", calls: [] }
          assistant.content += text
        } else if (role === "user") {
          flush()
          const parts = partsOf(raw["content"], `${path}.content`).flatMap((part, j) => userPart(part, `${path}.content[${j}]`) ?? [])
          if (parts.length > 0) messages.push({ role: "user", content: parts })
        } else {
          reject(`Unsupported message role '${String(role)}'`, `${path}.role`)
        }
        return
      }
      case "function_call":
      case "custom_tool_call": {
        const callId = raw["call_id"]
        const name = raw["name"]
        if (typeof callId !== "string" || callId === "") return reject("calls need a 'call_id'", `${path}.call_id`)
        if (typeof name !== "string" || name === "") return reject("calls need a 'name'", `${path}.name`)
        const upstreamName = upstreamToolName(name, typeof raw["namespace"] === "string" ? raw["namespace"] : undefined)
        const args = type === "function_call"
          ? typeof raw["arguments"] === "string" ? raw["arguments"] : "{}"
          // Custom tools are lowered to `{input: string}` upstream (see tools.ts).
          : JSON.stringify({ input: typeof raw["input"] === "string" ? raw["input"] : "" })
        return call(callId, upstreamName, args)
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        flush()
        const callId = raw["call_id"]
        if (typeof callId !== "string" || callId === "") return reject("outputs need a 'call_id'", `${path}.call_id`)
        messages.push({ role: "tool", tool_call_id: callId, content: toolOutput(raw["output"], `${path}.output`) })
        return
      }
      case "compaction":
      case "compaction_summary": {
        flush()
        const text = compactedText(raw, path)
        if (text !== "") messages.push({ role: "user", content: [{ type: "text", text }] })
        return
      }
      case "reasoning":
      case "web_search_call":
        // Not replayable on a Chat server (see the module comment); the text that followed stays.
        return
      case "item_reference":
        return reject("item_reference needs stored responses, which this gateway does not keep; send the items themselves", path)
      default:
        return reject(`Input item type '${String(type)}' is not supported on this model`, `${path}.type`)
    }
  })
  flush()
  return messages
}

const chatTool = (tool: AnthropicTool): Record<string, unknown> => ({
  type: "function",
  function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: tool.input_schema }
})

const chatToolChoice = (choice: AnthropicToolChoice | undefined): Record<string, unknown> => {
  if (choice === undefined) return {}
  const parallel = "disable_parallel_tool_use" in choice && choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {}
  switch (choice.type) {
    case "auto":
      return { tool_choice: "auto", ...parallel }
    case "any":
      return { tool_choice: "required", ...parallel }
    case "none":
      return { tool_choice: "none" }
    case "tool":
      return { tool_choice: { type: "function", function: { name: choice.name } }, ...parallel }
  }
}

const responseFormatOf = (text: unknown): Record<string, unknown> => {
  if (!isRecord(text) || !isRecord(text["format"])) return {}
  const format = text["format"]
  if (format["type"] === "json_object") return { response_format: { type: "json_object" } }
  if (format["type"] !== "json_schema") return {}
  const schema = format["schema"]
  if (!isRecord(schema)) return reject("text.format.schema must be a JSON Schema object", "text.format.schema")
  return {
    response_format: {
      type: "json_schema",
      json_schema: {
        name: typeof format["name"] === "string" && format["name"] !== "" ? format["name"] : "output",
        schema,
        ...(typeof format["description"] === "string" ? { description: format["description"] } : {}),
        ...(typeof format["strict"] === "boolean" ? { strict: format["strict"] } : {})
      }
    }
  }
}

const positiveInt = (v: unknown, param: string): number | undefined => {
  if (v === undefined || v === null) return undefined
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : reject(`${param} must be a positive integer`, param)
}

const translate = (body: Record<string, unknown>, options: ChatTranslateOptions): Record<string, unknown> => {
  if (body["conversation"] !== undefined && body["conversation"] !== null) {
    reject("conversation is not supported by this gateway; send the full conversation history in input", "conversation")
  }
  const system: Array<string> = typeof body["instructions"] === "string" && body["instructions"] !== "" ? [body["instructions"]] : []
  const messages = messagesOf(body["input"], system)
  const { tools, choice } = selectTools(translateTools(body["tools"]), body["tool_choice"], body["parallel_tool_calls"])
  const maxTokens = positiveInt(body["max_output_tokens"], "max_output_tokens")
  const reasoning = isRecord(body["reasoning"]) ? body["reasoning"]["effort"] : undefined
  const user = typeof body["safety_identifier"] === "string" ? body["safety_identifier"] : body["user"]
  const stream = body["stream"] === true
  return {
    model: options.upstreamModel,
    messages: [...(system.length > 0 ? [{ role: "system", content: system.join("\n\n") }] : []), ...messages],
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    ...(tools.length > 0 ? { tools: tools.map(chatTool), ...chatToolChoice(choice) } : {}),
    ...responseFormatOf(body["text"]),
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    ...(typeof reasoning === "string" ? { reasoning_effort: reasoning } : {}),
    ...(typeof body["temperature"] === "number" ? { temperature: body["temperature"] } : {}),
    ...(typeof body["top_p"] === "number" ? { top_p: body["top_p"] } : {}),
    ...(typeof user === "string" && user !== "" ? { user } : {})
  }
}

export const responsesToChat = (
  body: Record<string, unknown>,
  options: ChatTranslateOptions
): Result.Result<Record<string, unknown>, TranslationError> => {
  try {
    return Result.succeed(translate(body, options))
  } catch (e) {
    if (e instanceof TranslationError) return Result.fail(e)
    throw e
  }
}
