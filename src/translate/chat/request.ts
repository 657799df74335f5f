/**
 * A client's Chat Completions request -> the OpenAI Responses request for the same turn.
 * Pure: the door has parsed the JSON. Every field has a Responses equivalent or is refused with a
 * 400 naming it: a Chat client that asks for `n: 2`, logprobs or audio must not get an answer that
 * silently lacks them.
 */
import { Result } from "effect"
import { isRecord, reject, TranslationError } from "../error.js"

export { TranslationError } from "../error.js"

type Item = Record<string, unknown>

// ---------------------------------------------------------------------------------------------
// Messages -> input items
// ---------------------------------------------------------------------------------------------

const nonEmptyString = (v: unknown, what: string, path: string): string =>
  typeof v === "string" && v !== "" ? v : reject(`${what} must be a non-empty string`, path)

/** Text parts only (system, developer, tool and assistant content): a string or `[{type: "text"}]`. */
const textParts = (content: unknown, path: string, also: ReadonlyArray<string> = []): Array<{ readonly type: string; readonly text: string }> => {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }]
  if (!Array.isArray(content)) return reject("content must be a string or an array of content parts", path)
  return content.map((part: unknown, i) => {
    const at = `${path}[${i}]`
    if (!isRecord(part)) return reject("content parts must be objects", at)
    const type = part["type"]
    if (type === "text" || (typeof type === "string" && also.includes(type))) {
      const text = part[type === "text" ? "text" : type]
      if (typeof text !== "string") return reject(`${String(type)} parts need a string '${type === "text" ? "text" : type}'`, at)
      return { type, text }
    }
    return reject(`content parts of this message may only be ${["text", ...also].join(" or ")}`, `${at}.type`)
  })
}

const joinedText = (content: unknown, path: string): string =>
  textParts(content, path).map((p) => p.text).join("\n\n")

/** A user part -> an input part: text, an image (URL or data URL), a file. Audio has no equivalent. */
const userPart = (part: unknown, at: string): Item => {
  if (!isRecord(part)) return reject("content parts must be objects", at)
  switch (part["type"]) {
    case "text": {
      const text = part["text"]
      return typeof text === "string" ? { type: "input_text", text } : reject("text parts need a string 'text'", `${at}.text`)
    }
    case "image_url": {
      const image = part["image_url"]
      const url = isRecord(image) ? image["url"] : image
      if (typeof url !== "string" || url === "") return reject("image_url parts need an 'image_url.url'", `${at}.image_url.url`)
      const detail = isRecord(image) ? image["detail"] : undefined
      return { type: "input_image", image_url: url, detail: detail === "low" || detail === "high" ? detail : "auto" }
    }
    case "file": {
      const file = part["file"]
      if (!isRecord(file)) return reject("file parts need a 'file' object", `${at}.file`)
      const data = file["file_data"]
      const id = file["file_id"]
      const filename = file["filename"]
      if (typeof data === "string" && data !== "") {
        return { type: "input_file", file_data: data, ...(typeof filename === "string" ? { filename } : {}) }
      }
      if (typeof id === "string" && id !== "") return { type: "input_file", file_id: id }
      return reject("file parts need 'file.file_data' or 'file.file_id'", `${at}.file`)
    }
    case "input_audio":
      return reject("audio input is not supported by this gateway", `${at}.type`)
    default:
      return reject("unknown content part type", `${at}.type`)
  }
}

const userItem = (content: unknown, path: string): Item | undefined => {
  if (typeof content === "string") return { type: "message", role: "user", content: [{ type: "input_text", text: content }] }
  if (!Array.isArray(content)) return reject("content must be a string or an array of content parts", path)
  if (content.length === 0) return undefined
  return { type: "message", role: "user", content: content.map((part: unknown, i) => userPart(part, `${path}[${i}]`)) }
}

const toolCallItem = (call: unknown, at: string): Item => {
  if (!isRecord(call)) return reject("tool_calls entries must be objects", at)
  if (call["type"] !== undefined && call["type"] !== "function") return reject("only function tool calls are supported", `${at}.type`)
  const fn = call["function"]
  if (!isRecord(fn)) return reject("tool calls need a 'function' object", `${at}.function`)
  const args = fn["arguments"]
  return {
    type: "function_call",
    call_id: nonEmptyString(call["id"], "tool call 'id'", `${at}.id`),
    name: nonEmptyString(fn["name"], "tool call 'function.name'", `${at}.function.name`),
    arguments: typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args)
  }
}

/**
 * The reasoning an assistant message carries back in `reasoning_details` (as this door sent it:
 * src/translate/chat/output.ts), as the reasoning items it came from; other kinds of detail are
 * another provider's and cannot be replayed.
 */
const reasoningItems = (details: unknown): Array<Item> =>
  Array.isArray(details)
    ? details.flatMap((d: unknown): Array<Item> =>
      isRecord(d) && d["type"] === "reasoning.encrypted" && typeof d["id"] === "string" && d["id"] !== "" &&
        typeof d["data"] === "string" && d["data"] !== ""
        ? [{ type: "reasoning", id: d["id"], summary: [], encrypted_content: d["data"] }]
        : []
    )
    : []

/** An assistant turn: its reasoning, its text (and refusal) as one message, then its calls, in Chat's order. */
const assistantItems = (message: Record<string, unknown>, path: string, items: Array<Item>): void => {
  if (message["audio"] !== undefined && message["audio"] !== null) return reject("assistant audio is not supported by this gateway", `${path}.audio`)
  if (message["function_call"] !== undefined && message["function_call"] !== null) {
    return reject("function_call is deprecated; send tool_calls", `${path}.function_call`)
  }
  items.push(...reasoningItems(message["reasoning_details"]))
  const content = message["content"]
  const parts = content === undefined || content === null ? [] : textParts(content, `${path}.content`, ["refusal"])
  const out = parts.filter((p) => p.text !== "").map((p) => p.type === "refusal" ? { type: "refusal", refusal: p.text } : { type: "output_text", text: p.text })
  if (out.length > 0) items.push({ type: "message", role: "assistant", content: out })
  const calls = message["tool_calls"]
  if (calls === undefined || calls === null) return
  if (!Array.isArray(calls)) return reject("tool_calls must be an array", `${path}.tool_calls`)
  calls.forEach((call: unknown, i) => items.push(toolCallItem(call, `${path}.tool_calls[${i}]`)))
}

const inputItems = (messages: unknown): Array<Item> => {
  if (!Array.isArray(messages) || messages.length === 0) return reject("messages must be a non-empty array", "messages")
  const items: Array<Item> = []
  messages.forEach((message: unknown, i) => {
    const path = `messages[${i}]`
    if (!isRecord(message)) return reject("messages must be objects", path)
    const role = message["role"]
    switch (role) {
      case "system":
      case "developer": {
        const text = joinedText(message["content"], `${path}.content`)
        items.push({ type: "message", role, content: [{ type: "input_text", text }] })
        return
      }
      case "user": {
        const item = userItem(message["content"], `${path}.content`)
        if (item !== undefined) items.push(item)
        return
      }
      case "assistant":
        return assistantItems(message, path, items)
      case "tool":
        items.push({
          type: "function_call_output",
          call_id: nonEmptyString(message["tool_call_id"], "tool messages' 'tool_call_id'", `${path}.tool_call_id`),
          output: joinedText(message["content"], `${path}.content`)
        })
        return
      case "function":
        return reject("function messages are deprecated; send tool messages", `${path}.role`)
      default:
        return reject("role must be one of system, developer, user, assistant, tool", `${path}.role`)
    }
  })
  return items
}

// ---------------------------------------------------------------------------------------------
// Tools, output format, sampling
// ---------------------------------------------------------------------------------------------

const toolsOf = (tools: unknown): Array<Item> | undefined => {
  if (tools === undefined || tools === null) return undefined
  if (!Array.isArray(tools)) return reject("tools must be an array", "tools")
  return tools.map((tool: unknown, i) => {
    const at = `tools[${i}]`
    if (!isRecord(tool)) return reject("tools must be objects", at)
    if (tool["type"] !== "function") return reject("only function tools are supported", `${at}.type`)
    const fn = tool["function"]
    if (!isRecord(fn)) return reject("function tools need a 'function' object", `${at}.function`)
    const parameters = fn["parameters"]
    if (parameters !== undefined && !isRecord(parameters)) return reject("function.parameters must be a JSON Schema object", `${at}.function.parameters`)
    return {
      type: "function",
      name: nonEmptyString(fn["name"], "function.name", `${at}.function.name`),
      ...(typeof fn["description"] === "string" ? { description: fn["description"] } : {}),
      parameters: parameters ?? { type: "object", properties: {} },
      ...(typeof fn["strict"] === "boolean" ? { strict: fn["strict"] } : {})
    }
  })
}

const toolChoiceOf = (choice: unknown): unknown => {
  if (choice === undefined || choice === null) return undefined
  if (choice === "none" || choice === "auto" || choice === "required") return choice
  if (isRecord(choice) && choice["type"] === "function" && isRecord(choice["function"])) {
    return { type: "function", name: nonEmptyString(choice["function"]["name"], "tool_choice.function.name", "tool_choice.function.name") }
  }
  return reject("tool_choice must be none, auto, required or {type: 'function', function: {name}}", "tool_choice")
}

const textFormatOf = (format: unknown): Item | undefined => {
  if (format === undefined || format === null) return undefined
  if (!isRecord(format)) return reject("response_format must be an object", "response_format")
  switch (format["type"]) {
    case "text":
      return { type: "text" }
    case "json_object":
      return { type: "json_object" }
    case "json_schema": {
      const spec = format["json_schema"]
      if (!isRecord(spec)) return reject("response_format.json_schema must be an object", "response_format.json_schema")
      const schema = spec["schema"]
      if (schema !== undefined && !isRecord(schema)) return reject("json_schema.schema must be a JSON Schema object", "response_format.json_schema.schema")
      return {
        type: "json_schema",
        name: nonEmptyString(spec["name"], "json_schema.name", "response_format.json_schema.name"),
        schema: schema ?? {},
        ...(typeof spec["description"] === "string" ? { description: spec["description"] } : {}),
        ...(typeof spec["strict"] === "boolean" ? { strict: spec["strict"] } : {})
      }
    }
    default:
      return reject("response_format.type must be text, json_object or json_schema", "response_format.type")
  }
}

const maxTokensOf = (body: Record<string, unknown>): number | undefined => {
  const field = body["max_completion_tokens"] !== undefined && body["max_completion_tokens"] !== null ? "max_completion_tokens" : "max_tokens"
  const v = body[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) return reject(`${field} must be a positive integer`, field)
  return v
}

const REASONING_EFFORTS: ReadonlyArray<unknown> = ["none", "minimal", "low", "medium", "high", "xhigh"]

/**
 * Fields Chat has and Responses does not, refused rather than dropped. A field at its default
 * (`n: 1`, `logprobs: false`, a zero penalty) asks for nothing and passes.
 */
const unsupported = (body: Record<string, unknown>): void => {
  const set = (field: string) => body[field] !== undefined && body[field] !== null
  if (set("n") && body["n"] !== 1) reject("n must be 1: this gateway returns one choice", "n")
  if (set("logprobs") && body["logprobs"] !== false) reject("logprobs are not supported by this gateway", "logprobs")
  if (set("top_logprobs") && body["top_logprobs"] !== 0) reject("top_logprobs are not supported by this gateway", "top_logprobs")
  if (set("audio")) reject("audio output is not supported by this gateway", "audio")
  if (set("modalities") && (!Array.isArray(body["modalities"]) || body["modalities"].some((m) => m !== "text"))) {
    reject("only the text modality is supported by this gateway", "modalities")
  }
  for (const field of ["frequency_penalty", "presence_penalty"]) {
    if (set(field) && body[field] !== 0) reject(`${field} is not supported by this gateway's upstreams`, field)
  }
  for (const field of ["logit_bias", "seed", "prediction", "web_search_options", "functions", "function_call"]) {
    if (set(field)) reject(`${field} is not supported by this gateway`, field)
  }
  if (set("stop")) reject("stop is not supported by this group's upstream", "stop")
}

/** Chat's newer `safety_identifier`, else its older `user`: both name the end user for abuse checks. */
const safetyIdentifierOf = (body: Record<string, unknown>): { readonly safety_identifier?: string } => {
  const id = body["safety_identifier"] ?? body["user"]
  return typeof id === "string" && id !== "" ? { safety_identifier: id } : {}
}

const translate = (body: Record<string, unknown>): Record<string, unknown> => {
  unsupported(body)
  const stream = body["stream"]
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") return reject("stream must be a boolean", "stream")
  const input = inputItems(body["messages"])
  const tools = toolsOf(body["tools"])
  const toolChoice = toolChoiceOf(body["tool_choice"])
  const format = textFormatOf(body["response_format"])
  const maxTokens = maxTokensOf(body)
  const effort = body["reasoning_effort"]
  if (effort !== undefined && effort !== null && !REASONING_EFFORTS.includes(effort)) {
    return reject("reasoning_effort must be one of none, minimal, low, medium, high, xhigh", "reasoning_effort")
  }
  const parallel = body["parallel_tool_calls"]
  const metadata = body["metadata"]
  if (metadata !== undefined && metadata !== null && !isRecord(metadata)) return reject("metadata must be an object", "metadata")
  return {
    ...(body["model"] !== undefined ? { model: body["model"] } : {}),
    input,
    stream: stream === true,
    store: false,
    // Nothing is stored upstream: reasoning comes back with its payload, for the next turn to replay.
    include: ["reasoning.encrypted_content"],
    ...(tools !== undefined && tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(typeof parallel === "boolean" ? { parallel_tool_calls: parallel } : {}),
    ...(format !== undefined ? { text: { format } } : {}),
    ...(maxTokens !== undefined ? { max_output_tokens: maxTokens } : {}),
    ...(typeof effort === "string" ? { reasoning: { effort } } : {}),
    ...(typeof body["temperature"] === "number" ? { temperature: body["temperature"] } : {}),
    ...(typeof body["top_p"] === "number" ? { top_p: body["top_p"] } : {}),
    ...safetyIdentifierOf(body),
    ...(typeof body["prompt_cache_key"] === "string" && body["prompt_cache_key"] !== "" ? { prompt_cache_key: body["prompt_cache_key"] } : {}),
    ...(isRecord(metadata) ? { metadata } : {}),
    ...(typeof body["service_tier"] === "string" ? { service_tier: body["service_tier"] } : {})
  }
}

export const chatToResponses = (body: Record<string, unknown>): Result.Result<Record<string, unknown>, TranslationError> => {
  try {
    return Result.succeed(translate(body))
  } catch (e) {
    if (e instanceof TranslationError) return Result.fail(e)
    throw e
  }
}
