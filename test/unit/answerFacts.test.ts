/**
 * src/domain/answerFacts.ts: what the request's span reports as `gen_ai.response.*`, read from the
 * upstream's own answer: why it stopped (OpenAI's incomplete reason before its status, Anthropic's
 * stop_reason), and nothing for a stream cut before its terminal event.
 */
import { describe, expect, it } from "@effect/vitest"
import { afterMessagesEvent, afterResponsesEvent, messagesAnswerFacts, responsesAnswerFacts } from "../../src/domain/answerFacts.js"

describe("OpenAI Responses answers", () => {
  it("a completed answer: its id, model and status", () => {
    expect(responsesAnswerFacts({ id: "resp_1", model: "gpt-5.4-2026-03-01", status: "completed", incomplete_details: null }))
      .toEqual({ id: "resp_1", model: "gpt-5.4-2026-03-01", finishReason: "completed" })
  })

  it("an incomplete answer stopped for the reason it gives", () => {
    expect(responsesAnswerFacts({ id: "resp_2", status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }).finishReason)
      .toBe("max_output_tokens")
  })

  it("a stream: id and model from response.created, the finish reason only from the terminal event", () => {
    let facts = afterResponsesEvent(undefined, { type: "response.created", response: { id: "resp_3", model: "m", status: "in_progress" } })
    facts = afterResponsesEvent(facts, { type: "response.output_text.delta", delta: "hi" })
    expect(facts).toEqual({ id: "resp_3", model: "m" })
    facts = afterResponsesEvent(facts, { type: "response.failed", response: { id: "resp_3", model: "m", status: "failed" } })
    expect(facts).toEqual({ id: "resp_3", model: "m", finishReason: "failed" })
  })

  it("fields that are not strings are left out", () => {
    expect(responsesAnswerFacts({ id: 7, model: null })).toEqual({ id: undefined, model: undefined, finishReason: undefined })
  })
})

describe("Anthropic Messages answers", () => {
  it("a JSON message: its id, model and stop_reason", () => {
    expect(messagesAnswerFacts({ id: "msg_1", model: "claude-sonnet-4-5-20250929", stop_reason: "tool_use" }))
      .toEqual({ id: "msg_1", model: "claude-sonnet-4-5-20250929", finishReason: "tool_use" })
  })

  it("a stream: message_start names it, message_delta says why it stopped", () => {
    let facts = afterMessagesEvent(undefined, { type: "message_start", message: { id: "msg_2", model: "c", stop_reason: null } })
    expect(facts).toEqual({ id: "msg_2", model: "c", finishReason: undefined })
    facts = afterMessagesEvent(facts, { type: "content_block_delta", delta: { type: "text_delta", text: "x" } })
    facts = afterMessagesEvent(facts, { type: "message_delta", delta: { stop_reason: "max_tokens" }, usage: { output_tokens: 3 } })
    expect(facts).toEqual({ id: "msg_2", model: "c", finishReason: "max_tokens" })
  })
})
