/** Chat Completions requests -> Responses requests: what is mapped, and what is refused by name. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { chatToResponses } from "../../../src/translate/chat/request.js"

const ok = (body: Record<string, unknown>) => {
  const result = chatToResponses(body)
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message} (${result.failure.param})`)
  return result.success
}

const refusal = (body: Record<string, unknown>) => {
  const result = chatToResponses(body)
  if (Result.isSuccess(result)) throw new Error("accepted")
  return { message: result.failure.message, param: result.failure.param }
}

describe("chatToResponses", () => {
  it("maps a tool conversation: system, developer, multi-part user with an image, calls and their results", () => {
    const out = ok({
      model: "gpt-5.4",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Use tools." }] },
        { role: "user", content: [{ type: "text", text: "What is in this file?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBOR", detail: "low" } }] },
        { role: "assistant", content: null, tool_calls: [
          { id: "call_1", type: "function", function: { name: "read", arguments: "{\"path\":\"a\"}" } },
          { id: "call_2", type: "function", function: { name: "read", arguments: "{\"path\":\"b\"}" } }
        ] },
        { role: "tool", tool_call_id: "call_1", content: "A" },
        { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "B" }] },
        { role: "assistant", content: "Both read." }
      ]
    })
    expect(out["input"]).toEqual([
      { type: "message", role: "system", content: [{ type: "input_text", text: "Be brief." }] },
      { type: "message", role: "developer", content: [{ type: "input_text", text: "Use tools." }] },
      { type: "message", role: "user", content: [
        { type: "input_text", text: "What is in this file?" },
        { type: "input_image", image_url: "data:image/png;base64,iVBOR", detail: "low" }
      ] },
      { type: "function_call", call_id: "call_1", name: "read", arguments: "{\"path\":\"a\"}" },
      { type: "function_call", call_id: "call_2", name: "read", arguments: "{\"path\":\"b\"}" },
      { type: "function_call_output", call_id: "call_1", output: "A" },
      { type: "function_call_output", call_id: "call_2", output: "B" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Both read." }] }
    ])
    expect(out).toMatchObject({ model: "gpt-5.4", stream: false, store: false })
  })

  it("maps tools, tool_choice, structured output, token limits and sampling", () => {
    const out = ok({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      tools: [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: true } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" }, strict: true } },
      max_completion_tokens: 500,
      reasoning_effort: "low",
      temperature: 0.2,
      top_p: 0.9,
      user: "user-42",
      metadata: { team: "a" },
      n: 1,
      logprobs: false
    })
    expect(out).toEqual({
      model: "m",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
      stream: true,
      store: false,
      include: ["reasoning.encrypted_content"],
      tools: [{ type: "function", name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } }, strict: true }],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
      max_output_tokens: 500,
      reasoning: { effort: "low" },
      temperature: 0.2,
      top_p: 0.9,
      safety_identifier: "user-42",
      metadata: { team: "a" }
    })
    expect(ok({ messages: [{ role: "user", content: "x" }], max_tokens: 64, response_format: { type: "json_object" } }))
      .toMatchObject({ max_output_tokens: 64, text: { format: { type: "json_object" } } })
  })

  it("refuses what it cannot honour, naming the field", () => {
    const messages = [{ role: "user", content: "hi" }]
    expect(refusal({ messages, n: 2 }).param).toBe("n")
    expect(refusal({ messages, logprobs: true }).param).toBe("logprobs")
    expect(refusal({ messages, top_logprobs: 3 }).param).toBe("top_logprobs")
    expect(refusal({ messages, audio: { voice: "alloy", format: "wav" } }).param).toBe("audio")
    expect(refusal({ messages, modalities: ["text", "audio"] }).param).toBe("modalities")
    expect(refusal({ messages, stop: ["\n"] }).param).toBe("stop")
    expect(refusal({ messages, seed: 7 }).param).toBe("seed")
    expect(refusal({ messages, frequency_penalty: 0.5 }).param).toBe("frequency_penalty")
    expect(refusal({ messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "", format: "wav" } }] }] }).param)
      .toBe("messages[0].content[0].type")
    expect(refusal({ messages: [{ role: "function", name: "f", content: "x" }] }).param).toBe("messages[0].role")
    expect(refusal({ messages: [] }).param).toBe("messages")
    expect(refusal({ messages: [{ role: "tool", content: "x" }] }).param).toBe("messages[0].tool_call_id")
    expect(refusal({ messages, tools: [{ type: "custom", custom: { name: "x" } }] }).param).toBe("tools[0].type")
    expect(refusal({ messages, max_completion_tokens: 0 }).param).toBe("max_completion_tokens")
    expect(refusal({ messages, reasoning_effort: "extreme" }).param).toBe("reasoning_effort")
  })
})
