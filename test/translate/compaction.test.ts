/** The summarising request and the compacted window of /responses/compact on a Messages group. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { COMPACTION_PROMPT, compactedResponse, compactionRequest } from "../../src/translate/compaction.js"
import { decodeCompaction } from "../../src/translate/reasoning.js"
import type { AnthropicMessage } from "../../src/translate/types.js"

describe("compactionRequest", () => {
  it("asks for the summary after the conversation, within the model's own output limit", () => {
    const result = compactionRequest({ model: "m", input: "We shipped v2", stream: true, reasoning: { effort: "high" } }, { upstreamModel: "claude-3-haiku-20240307" })
    const request = Result.getOrThrow(result)
    expect(request.max_tokens).toBe(4096)
    expect(request.stream).toBe(false)
    expect(request.thinking).toBeUndefined()
    expect(request.messages.at(-1)?.content.map((b) => b.type === "text" ? b.text : b.type)).toEqual(["We shipped v2", COMPACTION_PROMPT])
    expect(Result.getOrThrow(compactionRequest({ model: "m" }, { upstreamModel: "claude-sonnet-4-6" })).max_tokens).toBe(8192)
  })

  it("refuses input of the wrong type, as a turn would", () => {
    const result = compactionRequest({ model: "m", input: { role: "user" } }, { upstreamModel: "claude-sonnet-4-6" })
    expect(Result.isFailure(result) && result.failure.param).toBe("input")
  })
})

describe("compactedResponse", () => {
  it("keeps the user messages, drops the rest, and seals the summary in one compaction item", () => {
    const message = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      content: [{ type: "text", text: "We did " }, { type: "text", text: "X." }],
      stop_reason: "end_turn",
      usage: { input_tokens: 100, output_tokens: 20, cache_read_input_tokens: 50 }
    } as unknown as AnthropicMessage
    const body = {
      input: [
        { role: "system", content: "s" },
        { role: "user", content: "first" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "a" }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "second" }] },
        { type: "function_call_output", call_id: "c", output: "o" }
      ]
    }
    const { response, usage } = compactedResponse(body, message, { id: "resp_1", createdAt: 1_800_000_000 })
    expect(usage).toMatchObject({ inputTokens: 150, outputTokens: 20, cacheReadTokens: 50 })
    expect(response).toMatchObject({ id: "resp_1", object: "response.compaction", created_at: 1_800_000_000 })
    const output = response["output"] as Array<Record<string, unknown>>
    expect(output.map((o) => [o["type"], o["role"], o["content"]])).toEqual([
      ["message", "user", [{ type: "input_text", text: "first" }]],
      ["message", "user", [{ type: "input_text", text: "second" }]],
      ["compaction", undefined, undefined]
    ])
    expect(decodeCompaction(output[2]!["encrypted_content"] as string)).toBe("We did X.")
    expect(response["usage"]).toMatchObject({ input_tokens: 150, output_tokens: 20, total_tokens: 170, input_tokens_details: { cached_tokens: 50 } })
  })
})
