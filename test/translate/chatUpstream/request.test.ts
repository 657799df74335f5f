/** Responses requests (as Codex and the openai SDK send them) -> Chat Completions requests for a compatible server. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { responsesToChat } from "../../../src/translate/chatUpstream/request.js"
import { completionToResponse } from "../../../src/translate/chatUpstream/response.js"
import { context } from "../helpers.js"

const ok = (body: Record<string, unknown>) => {
  const result = responsesToChat(body, { upstreamModel: "qwen3-coder" })
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message} (${result.failure.param})`)
  return result.success
}

describe("responsesToChat", () => {
  it("maps a Codex-style turn: instructions, history with calls and outputs, tools, custom tools, streaming usage", () => {
    const out = ok({
      model: "gpt-5-codex",
      instructions: "You are Codex.",
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "Sandbox: read-only." }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "List files" }, { type: "input_image", image_url: "data:image/png;base64,iVBOR", detail: "high" }] },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "opaque" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Running ls." }] },
        { type: "function_call", call_id: "call_1", name: "shell", arguments: "{\"cmd\":\"ls\"}" },
        { type: "custom_tool_call", call_id: "call_2", name: "apply_patch", input: "*** Begin Patch" },
        { type: "function_call_output", call_id: "call_1", output: "a\nb" },
        { type: "custom_tool_call_output", call_id: "call_2", output: "Done" }
      ],
      tools: [
        { type: "function", name: "shell", description: "Run", parameters: { type: "object", properties: { cmd: { type: "string" } } } },
        { type: "custom", name: "apply_patch", description: "Patch" },
        { type: "web_search" }
      ],
      tool_choice: "auto",
      parallel_tool_calls: false,
      reasoning: { effort: "high", summary: "auto" },
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
      max_output_tokens: 2048,
      stream: true,
      store: false,
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "k"
    })
    expect(out).toEqual({
      model: "qwen3-coder",
      messages: [
        { role: "system", content: "You are Codex.\n\nSandbox: read-only." },
        { role: "user", content: [{ type: "text", text: "List files" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBOR", detail: "high" } }] },
        { role: "assistant", content: "Running ls.", tool_calls: [
          { id: "call_1", type: "function", function: { name: "shell", arguments: "{\"cmd\":\"ls\"}" } },
          { id: "call_2", type: "function", function: { name: "apply_patch", arguments: "{\"input\":\"*** Begin Patch\"}" } }
        ] },
        { role: "tool", tool_call_id: "call_1", content: "a\nb" },
        { role: "tool", tool_call_id: "call_2", content: "Done" }
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [
        { type: "function", function: { name: "shell", description: "Run", parameters: { type: "object", properties: { cmd: { type: "string" } } } } },
        { type: "function", function: { name: "apply_patch", description: "Patch", parameters: { type: "object", properties: { input: { type: "string", description: "The raw input for this tool." } }, required: ["input"] } } }
      ],
      tool_choice: "auto",
      parallel_tool_calls: false,
      response_format: { type: "json_schema", json_schema: { name: "out", schema: { type: "object" }, strict: true } },
      max_tokens: 2048,
      reasoning_effort: "high"
    })
  })

  it("takes a plain string input and refuses what a Chat server cannot be given, naming it", () => {
    expect(ok({ model: "m", input: "hi" })["messages"]).toEqual([{ role: "user", content: [{ type: "text", text: "hi" }] }])
    const refused = (body: Record<string, unknown>) => {
      const result = responsesToChat(body, { upstreamModel: "m" })
      return Result.isFailure(result) ? result.failure.param : "accepted"
    }
    expect(refused({ input: [{ type: "item_reference", id: "msg_1" }] })).toBe("input[0]")
    expect(refused({ input: [{ type: "message", role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] })).toBe("input[0].content[0].image_url")
    expect(refused({ input: "x", tools: [{ type: "file_search", vector_store_ids: [] }] })).toBe("tools[0].type")
    expect(refused({ input: "x", conversation: "conv_1" })).toBe("conversation")
  })
})

describe("completionToResponse", () => {
  it("reads a compatible server's answer: reasoning_content, text, calls, DeepSeek's cache hits", () => {
    const { response, usage } = completionToResponse({
      id: "chatcmpl-9", object: "chat.completion", created: 1795640788, model: "deepseek-reasoner",
      choices: [{ index: 0, finish_reason: "tool_calls", message: {
        role: "assistant", reasoning_content: "Need the file.", content: "Reading.",
        tool_calls: [{ id: "call_x", type: "function", function: { name: "read", arguments: "{\"p\":1}" } }]
      } }],
      usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, prompt_cache_hit_tokens: 32, prompt_cache_miss_tokens: 18 }
    }, context({ model: "deepseek", input: "hi" }))
    expect(response).toMatchObject({
      object: "response",
      status: "completed",
      model: "deepseek",
      output: [
        { type: "reasoning", summary: [{ type: "summary_text", text: "Need the file." }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading." }] },
        { type: "function_call", call_id: "call_x", name: "read", arguments: "{\"p\":1}" }
      ],
      usage: { input_tokens: 50, output_tokens: 20, input_tokens_details: { cached_tokens: 32 } }
    })
    expect(usage).toMatchObject({ inputTokens: 50, outputTokens: 20, cacheReadTokens: 32 })
  })

  it("a length finish is incomplete", () => {
    const { response } = completionToResponse({ choices: [{ index: 0, finish_reason: "length", message: { role: "assistant", content: "par" } }] }, context())
    expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } })
  })
})
