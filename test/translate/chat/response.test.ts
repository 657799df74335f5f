/** A Responses JSON answer -> a `chat.completion`, read back by the openai SDK as a client would. */
import { describe, expect, it } from "@effect/vitest"
import { responseToCompletion } from "../../../src/translate/chat/response.js"
import { clientAnswering, NOW } from "./helpers.js"

const USAGE = { input_tokens: 1200, input_tokens_details: { cached_tokens: 1000 }, output_tokens: 85, output_tokens_details: { reasoning_tokens: 40 }, total_tokens: 1285 }

const answer = (output: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  id: "resp_77", object: "response", created_at: 1795640788, status: "completed", model: "gpt-5.4", output, usage: USAGE, ...extra
})

describe("responseToCompletion", () => {
  it("joins text, keeps reasoning and calls, and reports usage as Chat does", async () => {
    const { completion, usage } = responseToCompletion(answer([
      { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "Think." }], encrypted_content: "enc" },
      { id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Reading ", annotations: [] }, { type: "output_text", text: "both.", annotations: [] }] },
      { id: "fc_1", type: "function_call", status: "completed", call_id: "call_a", name: "read", arguments: "{\"path\":\"a\"}" }
    ]), { model: "gpt-5.4", nowSeconds: NOW })
    expect(completion).toEqual({
      id: "chatcmpl-77",
      object: "chat.completion",
      created: 1795640788,
      model: "gpt-5.4",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: "Reading both.",
          refusal: null,
          reasoning_content: "Think.",
          reasoning_details: [{ type: "reasoning.encrypted", id: "rs_1", data: "enc", format: "openai-responses-v1", index: 0 }],
          tool_calls: [{ id: "call_a", type: "function", function: { name: "read", arguments: "{\"path\":\"a\"}" } }],
          annotations: []
        },
        logprobs: null,
        finish_reason: "tool_calls"
      }],
      usage: { prompt_tokens: 1200, completion_tokens: 85, total_tokens: 1285, prompt_tokens_details: { cached_tokens: 1000 }, completion_tokens_details: { reasoning_tokens: 40 } },
      system_fingerprint: null
    })
    expect(usage.inputTokens).toBe(1200)
    const read = await clientAnswering(JSON.stringify(completion), "application/json").chat.completions.create({ model: "gpt-5.4", messages: [{ role: "user", content: "hi" }] })
    expect(read.choices[0]?.message.tool_calls?.[0]).toMatchObject({ id: "call_a", function: { name: "read" } })
  })

  it("a refusal is `refusal` with null content; a cut answer is `length`; no call left half-made", () => {
    const refused = responseToCompletion(answer([{ id: "msg_1", type: "message", role: "assistant", content: [{ type: "refusal", refusal: "I can't." }] }]), { model: "m", nowSeconds: NOW })
    expect(refused.completion.choices[0]?.message).toMatchObject({ content: null, refusal: "I can't." })
    const cut = responseToCompletion(answer([
      { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "par" }] },
      { id: "fc_1", type: "function_call", status: "incomplete", call_id: "c", name: "f", arguments: "{\"a" }
    ], { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }), { model: "m", nowSeconds: NOW })
    expect(cut.completion.choices[0]).toMatchObject({ finish_reason: "length", message: { content: "par" } })
    expect(cut.completion.choices[0]?.message.tool_calls).toBeUndefined()
  })
})
