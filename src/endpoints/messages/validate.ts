/**
 * What the Messages door checks of a request before admission: a JSON object with a model name,
 * a `messages` array and, if present, a boolean `stream`. The rest is the upstream's (passthrough)
 * or the translation's (src/translate/messages) to judge; fields we do not read pass through.
 */
import { Result } from "effect"
import { InvalidRequest } from "../../domain/errors.js"

export interface MessagesRequest {
  readonly model: string
  readonly stream: boolean
  /** The whole body, as sent. */
  readonly body: Record<string, unknown>
}

const invalid = (code: string, message: string, param: string | null) =>
  Result.fail(new InvalidRequest({ code, message, param }))

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export const validateMessagesBody = (json: unknown): Result.Result<MessagesRequest, InvalidRequest> => {
  if (!isRecord(json)) return invalid("invalid_request", "The request body must be a JSON object", null)
  const model = json["model"]
  if (model === undefined || model === null) return invalid("missing_model", "model: Field required", "model")
  if (typeof model !== "string" || model.trim() === "") return invalid("invalid_model", "model: must be a non-empty string", "model")
  const messages = json["messages"]
  if (messages === undefined) return invalid("missing_required_parameter", "messages: Field required", "messages")
  if (!Array.isArray(messages)) return invalid("invalid_type", "messages: must be an array", "messages")
  const stream = json["stream"]
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return invalid("invalid_type", "stream: must be a boolean", "stream")
  }
  return Result.succeed({ model, stream: stream === true, body: json })
}
