/**
 * What an upstream said of its own answer: its id, the model that produced it and why it stopped,
 * as the request's span reports them (OpenTelemetry's `gen_ai.response.*`). Read from the JSON
 * answer or from the stream events a renderer parses anyway; the provider's words, never ours
 * (the model before the requested name is restored, the upstream's id, not a translated one).
 * Pure and total: a field the upstream did not send as a string is left out.
 */

export interface AnswerFacts {
  readonly id?: string | undefined
  readonly model?: string | undefined
  /** OpenAI Responses: `incomplete_details.reason`, else `status`; Anthropic: `stop_reason`. */
  readonly finishReason?: string | undefined
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * An OpenAI Responses `response` object (a JSON answer, or a stream's lifecycle event's). Before
 * its terminal event a stream's response says only `in_progress`: no finish reason then.
 */
export const responsesAnswerFacts = (response: Record<string, unknown>, finished = true): AnswerFacts => {
  const id = text(response["id"])
  const model = text(response["model"])
  if (!finished) return { id, model }
  const details = response["incomplete_details"]
  return { id, model, finishReason: (isRecord(details) ? text(details["reason"]) : undefined) ?? text(response["status"]) }
}

const RESPONSES_TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"])

/** `facts` after one parsed Responses stream event: those carrying the `response` object update them. */
export const afterResponsesEvent = (facts: AnswerFacts | undefined, event: Record<string, unknown>): AnswerFacts | undefined => {
  const response = event["response"]
  if (!isRecord(response)) return facts
  return responsesAnswerFacts(response, RESPONSES_TERMINAL.has(event["type"] as string))
}

/** An Anthropic `message` (a JSON answer, or a stream's `message_start` message). */
export const messagesAnswerFacts = (message: Record<string, unknown>): AnswerFacts => ({
  id: text(message["id"]),
  model: text(message["model"]),
  finishReason: text(message["stop_reason"])
})

/** `facts` with the stop reason of an Anthropic `message_delta` event's `delta`, when it gives one. */
export const withStopReason = (facts: AnswerFacts | undefined, delta: unknown): AnswerFacts | undefined => {
  const reason = isRecord(delta) ? text(delta["stop_reason"]) : undefined
  return reason === undefined ? facts : { ...facts, finishReason: reason }
}

/** `facts` after one parsed Anthropic stream event: `message_start` names the answer, `message_delta` why it stopped. */
export const afterMessagesEvent = (facts: AnswerFacts | undefined, event: Record<string, unknown>): AnswerFacts | undefined => {
  const type = event["type"]
  if (type === "message_start") {
    const message = event["message"]
    return isRecord(message) ? messagesAnswerFacts(message) : facts
  }
  return type === "message_delta" ? withStopReason(facts, event["delta"]) : facts
}

const firstChoice = (answer: Record<string, unknown>): Record<string, unknown> => {
  const choices = answer["choices"]
  const first: unknown = Array.isArray(choices) ? choices[0] : undefined
  return isRecord(first) ? first : {}
}

/** An OpenAI-compatible `chat.completion` (a JSON answer): its id, model and the first choice's finish reason. */
export const chatAnswerFacts = (completion: Record<string, unknown>): AnswerFacts => ({
  id: text(completion["id"]),
  model: text(completion["model"]),
  finishReason: text(firstChoice(completion)["finish_reason"])
})

/** `facts` after one Chat chunk: every chunk names the answer; the last choice chunk says why it stopped. */
export const afterChatChunk = (facts: AnswerFacts | undefined, chunk: Record<string, unknown>): AnswerFacts | undefined => ({
  id: text(chunk["id"]) ?? facts?.id,
  model: text(chunk["model"]) ?? facts?.model,
  finishReason: text(firstChoice(chunk)["finish_reason"]) ?? facts?.finishReason
})
