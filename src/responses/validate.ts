/**
 * Validation of a POST /v1/responses body, in the pipeline's order, with the exact messages real
 * clients and the spec expect. Pure: JSON in, a typed view or the first InvalidRequest out.
 */
import { Either, Schema } from "effect"
import { InvalidRequest } from "../domain/errors.js"

export interface ResponsesRequest {
  readonly model: string
  readonly stream: boolean
  /** The whole body, for forwarding and translation; fields we do not interpret pass through. */
  readonly body: Record<string, unknown>
}

const invalid = (code: string, message: string, param: string | null) =>
  Either.left(new InvalidRequest({ code, message, param }))

const Model = Schema.String.pipe(Schema.minLength(1))
const isModel = Schema.is(Model)
const isStream = Schema.is(Schema.Boolean)

const MESSAGE_ID = /^(msg|message|item|chatcmpl)_[a-z0-9_-]{1,256}$/

const TOOL_OUTPUT_TYPES = new Set([
  "function_call_output",
  "custom_tool_call_output",
  "tool_search_output",
  "mcp_tool_call_output"
])
const TOOL_CALL_TYPES = new Set([
  "function_call",
  "custom_tool_call",
  "tool_search_call",
  "local_shell_call",
  "mcp_tool_call",
  "tool_call"
])

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined

const trimmedString = (v: unknown): string => (typeof v === "string" ? v.trim() : "")

/**
 * Every tool output must pair with a call in the same input (by call_id), or with an
 * `item_reference` whose id is that call_id. Over HTTP there is no stored history to pair with.
 */
export const checkToolOutputs = (input: unknown): Either.Either<void, InvalidRequest> => {
  if (!Array.isArray(input)) return Either.void
  const callIds = new Set<string>()
  const referenceIds = new Set<string>()
  const outputs: Array<{ index: number; callId: string }> = []
  input.forEach((raw, index) => {
    const item = asRecord(raw)
    if (!item) return
    const type = item["type"]
    if (typeof type !== "string") return
    if (TOOL_CALL_TYPES.has(type)) {
      const id = trimmedString(item["call_id"])
      if (id !== "") callIds.add(id)
    } else if (type === "item_reference") {
      const id = trimmedString(item["id"])
      if (id !== "") referenceIds.add(id)
    } else if (TOOL_OUTPUT_TYPES.has(type)) {
      outputs.push({ index, callId: trimmedString(item["call_id"]) })
    }
  })
  for (const { index, callId } of outputs) {
    if (callId === "") {
      return invalid(
        "function_call_output_uncorrelated",
        "function_call_output requires call_id on HTTP requests; send the matching function_call item in the same input " +
          "(continuation via previous_response_id is only supported on Responses WebSocket v2)",
        `input[${index}].call_id`
      )
    }
    if (!callIds.has(callId) && !referenceIds.has(callId)) {
      return invalid(
        "function_call_output_uncorrelated",
        `function_call_output with call_id '${callId}' has no matching function_call or item_reference in input; ` +
          "send the full history on HTTP requests (continuation via previous_response_id is only supported on Responses WebSocket v2)",
        `input[${index}].call_id`
      )
    }
  }
  return Either.void
}

export const validateResponsesBody = (json: unknown): Either.Either<ResponsesRequest, InvalidRequest> => {
  const body = asRecord(json)
  if (!body) return invalid("invalid_json", "Request body must be a JSON object", null)
  const model = body["model"]
  if (!isModel(model)) return invalid("missing_model", "model is required", "model")
  const stream = body["stream"]
  if (stream !== undefined && !isStream(stream)) return invalid("invalid_stream_type", "invalid stream field type", "stream")
  const previous = body["previous_response_id"]
  if (previous !== undefined && previous !== null) {
    const id = (typeof previous === "string" ? previous : JSON.stringify(previous)).trim()
    if (id !== "") {
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
  }
  return Either.map(checkToolOutputs(body["input"]), () => ({ model, stream: stream === true, body }))
}
