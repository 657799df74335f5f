/**
 * Validation of a POST /v1/responses body, in the pipeline's order, with the exact messages real
 * clients and the spec expect. Pure: JSON in, a typed view or the first InvalidRequest out.
 *
 * The body is decoded with one Schema, built at module load. Only three fields can refuse a
 * request here (model, stream, previous_response_id), then the tool outputs' correlation; every
 * other field is read leniently: a value of an unexpected type shows as absent in the typed view
 * and still travels upstream untouched in `body`. The gateway forwards the client's own bytes, so
 * the decoded view is for reading, never for re-serialising.
 */
import { Predicate, Result } from "effect"
import { InvalidRequest } from "../../domain/errors.js"
import { decodeBody, decodeInput, type InputItem, type ResponsesBody, type ResponsesRequest } from "./body.js"

const invalid = (code: string, message: string, param: string | null) => new InvalidRequest({ code, message, param })

export type { InputItem, ResponsesBody, ResponsesRequest, Tool, ToolChoice } from "./body.js"

// ---------------------------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------------------------

// The separator and the rest as message-like ids come: `msg_…`, `chatcmpl-…`, `msg_a.b`.
const MESSAGE_ID = /^(msg|message|item|chatcmpl)[_-][a-z0-9_.-]{1,256}$/

const previousResponseRefusal = (previous: unknown): InvalidRequest => {
  const id = (typeof previous === "string" ? previous : JSON.stringify(previous) ?? String(previous)).trim()
  return MESSAGE_ID.test(id.toLowerCase())
    ? invalid(
      "previous_response_id_not_response_id",
      "previous_response_id must be a response.id (resp_*), not a message id",
      "previous_response_id"
    )
    : invalid(
      "previous_response_id_unsupported",
      "previous_response_id is only supported on Responses WebSocket v2",
      "previous_response_id"
    )
}

/** The strict fields, each with the refusal its failure means. */
const refusals: Readonly<Record<PropertyKey, (body: Record<PropertyKey, unknown>) => InvalidRequest>> = {
  model: () => invalid("missing_model", "model is required", "model"),
  stream: () => invalid("invalid_stream_type", "invalid stream field type", "stream"),
  previous_response_id: (body) => previousResponseRefusal(body["previous_response_id"])
}

/** The first decoding failure (the key it failed at, in the schema's order) as the client's 400. */
const refusal = (key: PropertyKey, body: Record<PropertyKey, unknown>): InvalidRequest => {
  const refuse = refusals[key]
  if (refuse !== undefined) return refuse(body)
  // Only the strict fields can fail; reaching this is a bug in the schema, not a client error.
  throw new Error(`unexpected body decoding failure at '${String(key)}'`)
}

// ---------------------------------------------------------------------------------------------
// Tool output correlation
// ---------------------------------------------------------------------------------------------

const TOOL_CALL_TYPES = [
  "function_call",
  "custom_tool_call",
  "tool_search_call",
  "local_shell_call",
  "mcp_tool_call",
  "tool_call"
] as const
const TOOL_OUTPUT_TYPES = [
  "function_call_output",
  "custom_tool_call_output",
  "tool_search_output",
  "mcp_tool_call_output"
] as const

type ToolCallItem = Extract<InputItem, { readonly type: typeof TOOL_CALL_TYPES[number] }>
type ToolOutputItem = Extract<InputItem, { readonly type: typeof TOOL_OUTPUT_TYPES[number] }>

const toolCallTypes: ReadonlySet<InputItem["type"]> = new Set(TOOL_CALL_TYPES)
const toolOutputTypes: ReadonlySet<InputItem["type"]> = new Set(TOOL_OUTPUT_TYPES)
const isToolCall = (item: InputItem): item is ToolCallItem => toolCallTypes.has(item.type)
const isToolOutput = (item: InputItem): item is ToolOutputItem => toolOutputTypes.has(item.type)

const uncorrelated = (index: number, callId: string): InvalidRequest =>
  callId === ""
    ? invalid(
      "function_call_output_uncorrelated",
      "function_call_output requires call_id on HTTP requests; send the matching function_call item in the same input " +
        "(continuation via previous_response_id is only supported on Responses WebSocket v2)",
      `input[${index}].call_id`
    )
    : invalid(
      "function_call_output_uncorrelated",
      `function_call_output with call_id '${callId}' has no matching function_call or item_reference in input; ` +
        "send the full history on HTTP requests (continuation via previous_response_id is only supported on Responses WebSocket v2)",
      `input[${index}].call_id`
    )

/**
 * Every tool output must pair with a call in the same input (by call_id), or with an
 * `item_reference` whose id is that call_id. Over HTTP there is no stored history to pair with.
 */
const correlate = (input: ResponsesBody["input"]): Result.Result<void, InvalidRequest> => {
  if (!Array.isArray(input)) return Result.void
  const items: ReadonlyArray<InputItem> = input
  const known = new Set<string>()
  let firstOutput = -1
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!
    if (isToolCall(item)) {
      const id = item.call_id?.trim() ?? ""
      if (id !== "") known.add(id)
    } else if (item.type === "item_reference") {
      const id = item.id?.trim() ?? ""
      if (id !== "") known.add(id)
    } else if (firstOutput === -1 && isToolOutput(item)) {
      firstOutput = index
    }
  }
  if (firstOutput === -1) return Result.void
  for (let index = firstOutput; index < items.length; index++) {
    const item = items[index]!
    if (!isToolOutput(item)) continue
    const callId = item.call_id?.trim() ?? ""
    if (callId === "" || !known.has(callId)) return Result.fail(uncorrelated(index, callId))
  }
  return Result.void
}

/** The correlation check on a raw `input` value (anything; only arrays of items are checked). */
export const checkToolOutputs = (input: unknown): Result.Result<void, InvalidRequest> => correlate(decodeInput(input))

/**
 * A background response is answered `queued`, with no usage, and done upstream later: the gateway
 * could never settle what it costs, so it is refused (both Responses transports).
 */
export const backgroundRefusal = (): InvalidRequest =>
  invalid(
    "background_not_supported",
    "background mode is not supported: the gateway bills a response when it is answered; send the request without background",
    "background"
  )

export const validateResponsesBody = (json: unknown): Result.Result<ResponsesRequest, InvalidRequest> => {
  if (!Predicate.isObject(json)) return Result.fail(invalid("invalid_json", "Request body must be a JSON object", null))
  const result = decodeBody(json)
  if (Result.isFailure(result)) return Result.fail(refusal(result.failure, json))
  const decoded = result.success
  if (decoded.background === true) return Result.fail(backgroundRefusal())
  return Result.map(correlate(decoded.input), () => ({
    model: decoded.model,
    stream: decoded.stream === true,
    body: json,
    decoded
  }))
}
