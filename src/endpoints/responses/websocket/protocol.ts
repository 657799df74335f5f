/**
 * The Responses WebSocket transport (v2) as plain functions: what a client frame asks for, the
 * error event a client reads, the warm-up's answer. No socket here; tested without one. What the
 * gateway does with the transport is in docs/decisions.md ("Responses WebSocket"), its errors in
 * docs/errors.md.
 */
import type { Envelope } from "../../../domain/envelope.js"
import { newId } from "../../../domain/ids.js"
import { responseObject } from "../../../domain/responseObject.js"
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../../domain/jsonDepth.js"
import { backgroundRefusal } from "../validate.js"

/** What a client frame asks for. */
export type ClientFrame =
  /** `response.create` (or a frame with no `type`, read as one): the create body without the WS-only fields. */
  | {
    readonly _tag: "Create"
    readonly body: Record<string, unknown>
    readonly previousResponseId: string | undefined
    /** `generate: false`: a warm-up, answered without calling a model. */
    readonly warmUp: boolean
  }
  /** `response.processed` (later Codex): nothing to do. */
  | { readonly _tag: "Ignore" }
  | { readonly _tag: "Refuse"; readonly envelope: Envelope }

const refuse = (code: string, message: string, param: string | null = null): ClientFrame => ({
  _tag: "Refuse",
  envelope: { status: 400, type: "invalid_request_error", code, message, param }
})

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Reads one text frame. Binary frames are refused by the caller (Codex never sends them). */
export const parseClientFrame = (text: string): ClientFrame => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return refuse("invalid_json", "The message is not valid JSON")
  }
  if (!isRecord(parsed)) return refuse("invalid_json", "The message must be a JSON object")
  // Whatever reads the message later (a warm-up's echo, a turn's serialisation) recurses: a message
  // nested deeper than the stack allows is refused here, as an HTTP body is.
  if (nestsDeeperThan(parsed, MAX_JSON_DEPTH)) return refuse("invalid_json", `The message nests deeper than ${MAX_JSON_DEPTH} levels`)
  const type = parsed["type"]
  if (type === "response.processed") return { _tag: "Ignore" }
  if (type === "response.append") {
    return refuse(
      "unsupported_message_type",
      "response.append is Responses WebSocket v1; send response.create with previous_response_id (v2)",
      "type"
    )
  }
  if (type !== undefined && type !== "response.create") {
    return refuse("unsupported_message_type", `Unsupported message type '${String(type)}'; send response.create`, "type")
  }
  if (parsed["stream_id"] !== undefined && parsed["stream_id"] !== null) {
    return refuse("invalid_stream_id", "stream_id lanes are not supported: one response at a time per connection", "stream_id")
  }
  const previous = parsed["previous_response_id"]
  if (previous !== undefined && previous !== null && typeof previous !== "string") {
    return refuse("invalid_type", "previous_response_id must be a string", "previous_response_id")
  }
  if (parsed["background"] === true) {
    const refused = backgroundRefusal()
    return refuse(refused.code, refused.message, "background")
  }
  // The upstream gets a plain streaming create body: the WS-only fields stay here.
  const { type: _type, generate, previous_response_id: _previous, stream_id: _lane, ...body } = parsed
  return {
    _tag: "Create",
    body: { ...body, stream: true },
    previousResponseId: typeof previous === "string" && previous !== "" ? previous : undefined,
    warmUp: generate === false
  }
}

/** The in-band error event: always with `status`, or Codex waits for its idle timeout. */
export const errorEvent = (e: Envelope): string =>
  JSON.stringify({
    type: "error",
    status: e.status,
    error: { type: e.type, code: e.code, message: e.message, param: e.param },
    ...(e.headers === undefined ? {} : { headers: e.headers })
  })

/** `tooLarge`: the response was not kept because its transcript was larger than the connection keeps. */
export const previousResponseNotFound = (
  id: string,
  tooLarge?: { readonly bytes: number; readonly maxBytes: number }
): Envelope => ({
  status: 400,
  type: "invalid_request_error",
  code: "previous_response_not_found",
  message: `Previous response with id '${id}' not found.` +
    (tooLarge === undefined
      ? ""
      : ` Its conversation (about ${tooLarge.bytes} bytes) is larger than a connection keeps (${tooLarge.maxBytes} bytes); ` +
        "send the full input without previous_response_id."),
  param: "previous_response_id"
})

/** The 60-minute (configurable) limit: Codex reconnects and sends the full input. */
export const connectionLimitReached = (maxAgeMillis: number): Envelope => {
  const age = maxAgeMillis >= 60_000 ? `${Math.round(maxAgeMillis / 60_000)} minutes` : `${Math.max(1, Math.round(maxAgeMillis / 1000))} seconds`
  return {
    status: 400,
    type: "invalid_request_error",
    code: "websocket_connection_limit_reached",
    message: `Responses websocket connection limit reached (${age}). Create a new websocket connection to continue.`,
    param: null
  }
}

/**
 * A warm-up's answer: `response.created` and `response.completed` for a chainable id with no
 * output and no usage, with the request's own settings echoed. `nowMillis`: the caller's Clock time.
 */
export const warmUpEvents = (
  body: Record<string, unknown>,
  nowMillis: number,
  previousResponseId?: string
): { readonly id: string; readonly frames: ReadonlyArray<string> } => {
  const id = newId("resp")
  const at = Math.floor(nowMillis / 1000)
  const response = (status: "in_progress" | "completed") => ({
    ...responseObject({
      id,
      model: typeof body["model"] === "string" ? body["model"] : "",
      createdAt: at,
      status,
      completedAt: status === "completed" ? at : null,
      request: body,
      ...(previousResponseId === undefined ? {} : { previousResponseId }),
      usage: status === "completed"
        ? {
          input_tokens: 0,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 0,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 0
        }
        : null
    }),
    store: body["store"] === true
  })
  return {
    id,
    frames: [
      JSON.stringify({ type: "response.created", sequence_number: 0, response: response("in_progress") }),
      JSON.stringify({ type: "response.completed", sequence_number: 1, response: response("completed") })
    ]
  }
}

const LIFECYCLE = new Set(["response.created", "response.queued", "response.in_progress", "response.completed", "response.failed", "response.incomplete"])

/**
 * A lifecycle event of a chained turn with `previous_response_id` as the client sent it: the
 * upstream was sent the connection's whole transcript instead of the id, so its answer names none.
 * Other frames are returned as they are.
 */
export const withPreviousResponseId = (frame: string, type: string | undefined, id: string): string => {
  if (type === undefined || !LIFECYCLE.has(type)) return frame
  try {
    const event: unknown = JSON.parse(frame)
    if (!isRecord(event) || !isRecord(event["response"])) return frame
    return JSON.stringify({ ...event, response: { ...event["response"], previous_response_id: id } })
  } catch {
    return frame
  }
}
