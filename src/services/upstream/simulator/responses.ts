/**
 * A deterministic stand-in for the OpenAI Responses API (protocols.md 1.4 and 1.6).
 *
 * Given a `POST /v1/responses` body it produces both the non-streaming `Response` object and the
 * exact SSE event sequence a real upstream would send, so a `kind: simulator` account can answer
 * with no network. Behaviour:
 * - last input item is a `function_call_output`: a text answer that quotes the output;
 * - the last item is a user message whose prompt asks for one of the function tools (toolIntent.ts),
 *   or `tool_choice` names one or is "required": one `function_call`, arguments drawn from the
 *   prompt and shaped to the tool's schema, streamed in 2-3 argument deltas;
 * - otherwise a text answer echoing the last user message, streamed a few words per delta
 *   (a JSON object when `text.format` asks for json_schema / json_object);
 * - a text answer longer than `max_output_tokens` is cut and ends with `response.incomplete`.
 * Token counts are ceil(chars / 4). Ids are derived from a hash of the request unless `randomIds`
 * (which the simulator accounts use: a real upstream never repeats an id).
 */
import { responseObject } from "../../../domain/responseObject.js"
import {
  answerText,
  asArray,
  asNumber,
  asString,
  contentText,
  estimateTokens,
  evenChunks,
  idFactory,
  requestSeed,
  isRecord,
  type JsonObject,
  sampleFromSchema,
  serialise,
  type Simulated,
  type SimulateOptions,
  toolResultAnswerText,
  wordChunks
} from "./shared.js"
import { stripContext } from "./prompt.js"
import { type OfferedTool, plannedCall, type ToolChoice } from "./toolIntent.js"

type Plan =
  | { readonly _tag: "Text"; readonly text: string; readonly truncated: boolean }
  | { readonly _tag: "FunctionCall"; readonly name: string; readonly arguments: string }

interface InputView {
  /** Text of the last user message anywhere in the input ("" if none). */
  readonly lastUserText: string
  /** What the very last input item is. */
  readonly lastKind: "user" | "function_call_output" | "other"
  /** The output of the last item when it is a function_call_output. */
  readonly lastToolOutput: string
}

const isMessageItem = (item: JsonObject): boolean =>
  item["type"] === "message" || (item["type"] === undefined && typeof item["role"] === "string")

const viewInput = (input: unknown): InputView => {
  if (typeof input === "string") return { lastUserText: input, lastKind: "user", lastToolOutput: "" }
  // System and developer messages after the prompt (a translated Claude Code request ends with one)
  // are context, not a turn.
  const items = asArray(input).filter(isRecord).filter((i) => !(isMessageItem(i) && (i["role"] === "system" || i["role"] === "developer")))
  let lastUserText = ""
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]
    if (item !== undefined && isMessageItem(item) && item["role"] === "user") {
      lastUserText = contentText(item["content"])
      break
    }
  }
  const last = items[items.length - 1]
  if (last === undefined) return { lastUserText, lastKind: "other", lastToolOutput: "" }
  if (last["type"] === "function_call_output") {
    const output = last["output"]
    return { lastUserText, lastKind: "function_call_output", lastToolOutput: contentText(output) }
  }
  if (isMessageItem(last) && last["role"] === "user") return { lastUserText, lastKind: "user", lastToolOutput: "" }
  return { lastUserText, lastKind: "other", lastToolOutput: "" }
}

const offeredTools = (body: JsonObject): ReadonlyArray<OfferedTool> =>
  asArray(body["tools"])
    .filter(isRecord)
    .flatMap((t) => (t["type"] === "function" && typeof t["name"] === "string" ? [{ name: t["name"], schema: t["parameters"] }] : []))

/** `tool_choice`, or undefined for "none". */
const toolChoice = (body: JsonObject): ToolChoice | undefined => {
  const choice = body["tool_choice"]
  if (choice === "none") return undefined
  if (choice === "required") return { _tag: "Required" }
  if (isRecord(choice) && choice["type"] === "function" && typeof choice["name"] === "string") return { _tag: "Named", name: choice["name"] }
  return { _tag: "Auto" }
}

const formattedText = (body: JsonObject, plain: string): string => {
  const text = body["text"]
  const format = isRecord(text) ? text["format"] : undefined
  if (!isRecord(format)) return plain
  if (format["type"] === "json_schema") return JSON.stringify(sampleFromSchema(format["schema"]))
  if (format["type"] === "json_object") return JSON.stringify({ answer: plain })
  return plain
}

const plan = (body: JsonObject): Plan => {
  const view = viewInput(body["input"])
  if (view.lastKind === "user") {
    const choice = toolChoice(body)
    const call = choice === undefined ? undefined : plannedCall(view.lastUserText, offeredTools(body), choice)
    if (call !== undefined) return { _tag: "FunctionCall", name: call.name, arguments: JSON.stringify(call.input) }
  }
  const plain = view.lastKind === "function_call_output"
    ? toolResultAnswerText(view.lastToolOutput)
    : answerText(stripContext(view.lastUserText))
  const full = formattedText(body, plain)
  const max = asNumber(body["max_output_tokens"])
  if (max !== undefined && max >= 0 && estimateTokens(full) > max) {
    return { _tag: "Text", text: full.slice(0, Math.floor(max) * 4), truncated: true }
  }
  return { _tag: "Text", text: full, truncated: false }
}

/** `options.createdAt`: the time the caller read from its Clock (Unix seconds). */
export const simulateResponses = (body: Record<string, unknown>, options: SimulateOptions & { readonly createdAt: number }): Simulated => {
  const nextId = idFactory(requestSeed(body), options.randomIds === true)
  const createdAt = options.createdAt
  const responseId = nextId("resp")
  const model = asString(body["model"]) ?? "simulator"
  const answer = plan(body)

  // Every field of the Open Responses response object, the request's settings echoed as OpenAI does.
  const base = (): JsonObject => ({
    ...responseObject({ id: responseId, model, createdAt, status: "in_progress", request: body }),
    store: typeof body["store"] === "boolean" ? body["store"] : false
  })

  const inputChars = serialise(body["instructions"] ?? "") + serialise(body["input"] ?? "") + serialise(body["tools"] ?? [])
  const inputTokens = Math.max(1, estimateTokens(inputChars))

  const events: Array<JsonObject> = []
  const emit = (type: string, fields: JsonObject): void => {
    events.push({ type, sequence_number: events.length, ...fields })
  }
  emit("response.created", { response: base() })
  emit("response.in_progress", { response: base() })

  let item: JsonObject
  let outputTokens: number
  if (answer._tag === "Text") {
    const itemId = nextId("msg")
    const itemStatus = answer.truncated ? "incomplete" : "completed"
    const part = (text: string): JsonObject => ({ type: "output_text", text, annotations: [], logprobs: [] })
    const where = { item_id: itemId, output_index: 0, content_index: 0 }
    emit("response.output_item.added", {
      output_index: 0,
      item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] }
    })
    emit("response.content_part.added", { ...where, part: part("") })
    for (const delta of wordChunks(answer.text)) {
      emit("response.output_text.delta", { ...where, delta, logprobs: [] })
    }
    emit("response.output_text.done", { ...where, text: answer.text, logprobs: [] })
    emit("response.content_part.done", { ...where, part: part(answer.text) })
    item = { id: itemId, type: "message", status: itemStatus, role: "assistant", content: [part(answer.text)] }
    outputTokens = estimateTokens(answer.text)
  } else {
    const itemId = nextId("fc")
    const callId = nextId("call")
    const where = { item_id: itemId, output_index: 0 }
    emit("response.output_item.added", {
      output_index: 0,
      item: { id: itemId, type: "function_call", status: "in_progress", arguments: "", call_id: callId, name: answer.name }
    })
    for (const delta of evenChunks(answer.arguments, 3)) {
      emit("response.function_call_arguments.delta", { ...where, delta })
    }
    emit("response.function_call_arguments.done", { ...where, name: answer.name, arguments: answer.arguments })
    item = { id: itemId, type: "function_call", status: "completed", arguments: answer.arguments, call_id: callId, name: answer.name }
    outputTokens = estimateTokens(answer.arguments)
  }
  emit("response.output_item.done", { output_index: 0, item })

  outputTokens = Math.max(1, outputTokens)
  const truncated = answer._tag === "Text" && answer.truncated
  const final = (): JsonObject => ({
    ...base(),
    status: truncated ? "incomplete" : "completed",
    completed_at: truncated ? null : createdAt,
    incomplete_details: truncated ? { reason: "max_output_tokens" } : null,
    output: [structuredClone(item)],
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens
    }
  })
  emit(truncated ? "response.incomplete" : "response.completed", { response: final() })

  return { json: final(), events }
}
