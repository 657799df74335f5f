/**
 * Chat Completions chunk streams (as OpenAI-compatible servers send them) -> Responses events,
 * checked by the Responses grammar and by the strictest client: openai-node `responses.stream()`.
 */
import { describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { endChatStream, initialChatStreamState, stepChatStream, type ChatStreamEnding } from "../../../src/translate/chatUpstream/stream.js"
import type { ResponsesStreamEvent } from "../../../src/translate/index.js"
import { checkResponsesStream } from "../../support/responsesGrammar.js"
import { context, outputOf, terminal, toSse } from "../helpers.js"

type Chunk = Record<string, unknown>

const chunk = (delta: Chunk, finish: string | null = null): Chunk => ({
  id: "chatcmpl-1", object: "chat.completion.chunk", created: 1795640788, model: "qwen3", choices: [{ index: 0, delta, finish_reason: finish }]
})
const USAGE_CHUNK: Chunk = {
  id: "chatcmpl-1", object: "chat.completion.chunk", created: 1795640788, model: "qwen3", choices: [],
  usage: { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, prompt_tokens_details: { cached_tokens: 100 }, completion_tokens_details: { reasoning_tokens: 12 } }
}

const run = (chunks: ReadonlyArray<Chunk>, ending: ChatStreamEnding = { _tag: "Done" }, request?: Record<string, unknown>): Array<ResponsesStreamEvent> => {
  let state = initialChatStreamState(context(request ?? { model: "qwen3", input: "hi" }))
  const out: Array<ResponsesStreamEvent> = []
  for (const c of chunks) {
    const [next, emitted] = stepChatStream(state, c)
    state = next
    out.push(...emitted)
  }
  out.push(...endChatStream(state, ending)[1])
  return out
}

const sdkFinal = async (out: ReadonlyArray<ResponsesStreamEvent>) => {
  const client = new OpenAI({
    apiKey: "sk-test", baseURL: "http://gateway.test/v1", maxRetries: 0,
    fetch: async () => new Response(toSse(out), { status: 200, headers: { "content-type": "text/event-stream" } })
  })
  return client.responses.stream({ model: "qwen3", input: "hi" }).finalResponse()
}

const REASONING_TEXT = [
  chunk({ role: "assistant", content: "" }),
  chunk({ reasoning_content: "Think" }),
  chunk({ reasoning_content: "ing." }),
  chunk({ content: "Hello" }),
  chunk({ content: " there" }),
  chunk({}, "stop"),
  USAGE_CHUNK
]

const PARALLEL_CALLS = [
  chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "read", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"path\":" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "\"a\"}" } }] }),
  chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "read", arguments: "{\"path\":\"b\"}" } }] }),
  chunk({}, "tool_calls"),
  USAGE_CHUNK
]

describe("Chat chunks -> Responses events", () => {
  it("reasoning then text: a reasoning item and a message, usage with cached and reasoning tokens", async () => {
    const out = run(REASONING_TEXT)
    expect(checkResponsesStream(out)).toEqual([])
    const final = await sdkFinal(out)
    expect(final.status).toBe("completed")
    expect(final.output_text).toBe("Hello there")
    expect(final.output[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Thinking." }] })
    expect(final.usage).toMatchObject({ input_tokens: 120, output_tokens: 30, input_tokens_details: { cached_tokens: 100 }, output_tokens_details: { reasoning_tokens: 12 } })
  })

  it("parallel calls become two function_call items with whole arguments", async () => {
    const out = run(PARALLEL_CALLS)
    expect(checkResponsesStream(out)).toEqual([])
    const final = await sdkFinal(out)
    expect(final.output).toMatchObject([
      { type: "function_call", call_id: "call_a", name: "read", arguments: "{\"path\":\"a\"}", status: "completed" },
      { type: "function_call", call_id: "call_b", name: "read", arguments: "{\"path\":\"b\"}", status: "completed" }
    ])
    expect(outputOf(terminal(out))).toHaveLength(2)
  })

  it("restores a custom tool (Codex's apply_patch) from its lowered call", async () => {
    const request = { model: "qwen3", input: "hi", tools: [{ type: "custom", name: "apply_patch" }] }
    const out = run([
      chunk({ tool_calls: [{ index: 0, id: "call_p", type: "function", function: { name: "apply_patch", arguments: "{\"input\":\"*** Begin Patch\\n*** End Patch\"}" } }] }),
      chunk({}, "tool_calls")
    ], { _tag: "Done" }, request)
    const final = await sdkFinal(out)
    expect(final.output[0]).toMatchObject({ type: "custom_tool_call", call_id: "call_p", name: "apply_patch", input: "*** Begin Patch\n*** End Patch" })
  })

  it("a finish reason of length is incomplete; one that cuts a call fails rather than finish it", () => {
    const cut = run([chunk({ content: "par" }), chunk({}, "length")])
    expect(checkResponsesStream(cut)).toEqual([])
    expect(terminal(cut)).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } })
    const cutCall = run([
      chunk({ content: "par" }),
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: "{\"a" } }] }),
      chunk({}, "length")
    ])
    expect(checkResponsesStream(cutCall)).toEqual([])
    expect(terminal(cutCall)["status"]).toBe("failed")
    expect(outputOf(terminal(cutCall)).some((item) => item["type"] === "function_call")).toBe(false)
  })

  it("ends at the end of the stream when the server sends no [DONE] after its finish reason", () => {
    const out = run(REASONING_TEXT, { _tag: "Eof" })
    expect(terminal(out)["status"]).toBe("completed")
  })

  it("a stream cut before its finish reason, an error frame, or interleaved calls end as response.failed", async () => {
    for (const [name, chunks] of [
      ["cut", REASONING_TEXT.slice(0, 4)],
      ["error frame", [...REASONING_TEXT.slice(0, 4), { error: { message: "model overloaded", type: "server_error", code: null } }]],
      ["interleaved", [...PARALLEL_CALLS.slice(0, 2), PARALLEL_CALLS[3]!, chunk({ tool_calls: [{ index: 0, function: { arguments: "\"a\"}" } }] }), chunk({}, "tool_calls")]]
    ] as const) {
      const out = run(chunks, { _tag: "Eof" })
      expect(checkResponsesStream(out), name).toEqual([])
      expect(terminal(out)["status"], name).toBe("failed")
      expect((await sdkFinal(out)).status, name).toBe("failed")
    }
  })
})
