/**
 * What the Messages door checks of a request before admission, on every group, as Anthropic
 * checks it (the same fields required, the same words: "max_tokens: Field required"): a JSON
 * object with a model name, a `messages` array, a positive integer `max_tokens` (not on
 * count_tokens, which takes none) and, if present, a boolean `stream`. A translated group would
 * otherwise answer what Anthropic refuses, and a passthrough one would spend an upstream call on
 * it. The rest is the upstream's (passthrough) or the translation's (src/translate/messages) to
 * judge; fields we do not read pass through.
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

/** Which body is checked: a message to create, or one whose tokens are counted (no `max_tokens`). */
export type MessagesBodyKind = "create" | "count_tokens"

export const validateMessagesBody = (
  json: unknown,
  kind: MessagesBodyKind = "create"
): Result.Result<MessagesRequest, InvalidRequest> => {
  if (!isRecord(json)) return invalid("invalid_request", "The request body must be a JSON object", null)
  const model = json["model"]
  if (model === undefined || model === null) return invalid("missing_model", "model: Field required", "model")
  if (typeof model !== "string") return invalid("invalid_model", "model: Input should be a valid string", "model")
  if (model.trim() === "") return invalid("invalid_model", "model: must be a non-empty string", "model")
  const messages = json["messages"]
  if (messages === undefined) return invalid("missing_required_parameter", "messages: Field required", "messages")
  if (!Array.isArray(messages)) return invalid("invalid_type", "messages: Input should be a valid list", "messages")
  if (kind === "create") {
    const maxTokens = json["max_tokens"]
    if (maxTokens === undefined) return invalid("missing_required_parameter", "max_tokens: Field required", "max_tokens")
    if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens)) {
      return invalid("invalid_type", "max_tokens: Input should be a valid integer", "max_tokens")
    }
    if (maxTokens < 1) return invalid("invalid_type", "max_tokens: Input should be greater than or equal to 1", "max_tokens")
  }
  const stream = json["stream"]
  if (stream !== undefined && stream !== null && typeof stream !== "boolean") {
    return invalid("invalid_type", "stream: Input should be a valid boolean", "stream")
  }
  return Result.succeed({ model, stream: stream === true, body: json })
}
