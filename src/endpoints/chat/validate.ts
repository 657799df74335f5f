/**
 * What the Chat door checks of a request before admission: a JSON object with a model name, a
 * non-empty `messages` array, a boolean `stream` and, if present, a `stream_options` object. The
 * rest is the translation's to judge (src/translate/chat/request.ts), which names every field it
 * cannot honour.
 */
import { Result } from "effect"
import { InvalidRequest } from "../../domain/errors.js"

export interface ChatRequest {
  readonly model: string
  readonly stream: boolean
  /** `stream_options.include_usage`: the client wants a last chunk with the usage. */
  readonly includeUsage: boolean
  /** The whole body, as sent. */
  readonly body: Record<string, unknown>
}

const invalid = (code: string, message: string, param: string | null) =>
  Result.fail(new InvalidRequest({ code, message, param }))

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const validateChatBody = (json: unknown): Result.Result<ChatRequest, InvalidRequest> => {
  if (!isRecord(json)) return invalid("invalid_request", "The request body must be a JSON object", null)
  const model = json["model"]
  if (model === undefined || model === null) return invalid("missing_required_parameter", "Missing required parameter: 'model'.", "model")
  if (typeof model !== "string" || model.trim() === "") return invalid("invalid_type", "Invalid type for 'model': expected a non-empty string.", "model")
  const messages = json["messages"]
  if (messages === undefined || messages === null) return invalid("missing_required_parameter", "Missing required parameter: 'messages'.", "messages")
  if (!Array.isArray(messages)) return invalid("invalid_type", "Invalid type for 'messages': expected an array.", "messages")
  if (messages.length === 0) return invalid("empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages")
  const stream = json["stream"]
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return invalid("invalid_type", "Invalid type for 'stream': expected a boolean.", "stream")
  }
  const options = json["stream_options"]
  if (options !== undefined && options !== null && !isRecord(options)) {
    return invalid("invalid_type", "Invalid type for 'stream_options': expected an object.", "stream_options")
  }
  return Result.succeed({
    model,
    stream: stream === true,
    includeUsage: isRecord(options) && options["include_usage"] === true,
    body: json
  })
}
