import { describe, expect, it } from "@effect/vitest"
import { decodeReasoning } from "../../src/translate/index.js"
import {
  MESSAGE_CACHED,
  MESSAGE_REDACTED,
  MESSAGE_TEXT,
  MESSAGE_TEXT_TOOL_TEXT,
  MESSAGE_THINKING_TOOL,
  MESSAGE_TOOL_ONLY,
  REDACTED_DATA,
  THINKING_SIGNATURE,
  THINKING_TEXT,
  TEXT_TOOL_TEXT,
  THINKING_TOOL
} from "./fixtures.js"
import { context, outputOf, runStream, terminal, toResponse } from "./helpers.js"

/** Fields the openai-node types mark as required on a Response. */
const REQUIRED = [
  "id",
  "object",
  "created_at",
  "output",
  "error",
  "incomplete_details",
  "instructions",
  "metadata",
  "model",
  "parallel_tool_calls",
  "temperature",
  "tool_choice",
  "tools",
  "top_p"
]

/** Item shapes without the random ids, to compare the JSON and stream translations. */
const shapes = (output: ReadonlyArray<Record<string, unknown>>) => output.map(({ id: _id, ...rest }) => rest)

describe("messageToResponse", () => {
  it("text: a complete Response with every required field, the requested model and usage", () => {
    const { response, usage } = toResponse(MESSAGE_TEXT, context())
    for (const key of REQUIRED) expect(response).toHaveProperty(key)
    expect(response).toMatchObject({
      id: "resp_test0001",
      object: "response",
      created_at: 1_795_640_788,
      status: "completed",
      model: "claude-sonnet-4-5",
      error: null,
      incomplete_details: null
    })
    expect(response["completed_at"]).toBe(1_795_640_790) // the context's now(), i.e. the caller's Clock
    const [message] = outputOf(response)
    expect(message).toMatchObject({
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Hello world", annotations: [], logprobs: [] }]
    })
    expect(String(message?.["id"])).toMatch(/^msg_/)
    expect(usage).toEqual({ inputTokens: 25, outputTokens: 12, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 })
    expect(response["usage"]).toEqual({
      input_tokens: 25,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 12,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 37
    })
  })

  it("echoes the request's settings", () => {
    const request = {
      model: "claude-opus-4-1",
      instructions: "Be brief.",
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      metadata: { team: "a" },
      max_output_tokens: 500,
      reasoning: { effort: "low", summary: "auto" },
      tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
      tool_choice: { type: "function", name: "f" }
    }
    const { response } = toResponse(MESSAGE_TEXT, context(request))
    expect(response).toMatchObject({
      model: "claude-opus-4-1",
      instructions: "Be brief.",
      temperature: 0.2,
      top_p: 0.9,
      parallel_tool_calls: false,
      metadata: { team: "a" },
      max_output_tokens: 500,
      reasoning: { effort: "low", summary: "auto" },
      tools: request.tools,
      tool_choice: request.tool_choice,
      text: { format: { type: "text" } }
    })
  })

  it("tool-only turn: function_call with the upstream id as call_id and \"{}\" for empty input", () => {
    const { response } = toResponse(MESSAGE_TOOL_ONLY, context())
    const output = outputOf(response)
    expect(output).toHaveLength(1)
    expect(output[0]).toMatchObject({
      type: "function_call",
      call_id: "toolu_01NoArgs",
      name: "list_files",
      arguments: "{}",
      status: "completed"
    })
    expect(String(output[0]?.["id"])).toMatch(/^fc_/)
  })

  it("thinking + tool: reasoning item (summary + encrypted block), message, function_call", () => {
    const { response, usage } = toResponse(MESSAGE_THINKING_TOOL, context())
    const output = outputOf(response)
    expect(output.map((i) => i["type"])).toEqual(["reasoning", "message", "function_call"])
    expect(String(output[0]?.["id"])).toMatch(/^rs_/)
    expect(output[0]?.["summary"]).toEqual([{ type: "summary_text", text: THINKING_TEXT }])
    expect(decodeReasoning(String(output[0]?.["encrypted_content"]))).toEqual({
      type: "thinking",
      thinking: THINKING_TEXT,
      signature: THINKING_SIGNATURE
    })
    expect(output[2]).toMatchObject({ arguments: "{\"location\":\"Paris\"}", call_id: "toolu_01Think" })
    expect(usage.reasoningTokens).toBe(30)
  })

  it("gives the same items as the stream translation of the same answer", () => {
    const json = outputOf(toResponse(MESSAGE_THINKING_TOOL, context()).response)
    const streamed = outputOf(terminal(runStream(THINKING_TOOL)))
    // The streamed fixture's arguments keep the upstream's spacing; compare everything else.
    const withoutArgs = (items: ReadonlyArray<Record<string, unknown>>) => shapes(items).map(({ arguments: _a, ...rest }) => rest)
    expect(withoutArgs(json)).toEqual(withoutArgs(streamed))
    expect(shapes(outputOf(toResponse(MESSAGE_TEXT_TOOL_TEXT, context()).response))[0]).toEqual(
      shapes(outputOf(terminal(runStream(TEXT_TOOL_TEXT))))[0]
    )
  })

  it("redacted thinking: a reasoning item with no summary, carrying the data", () => {
    const output = outputOf(toResponse(MESSAGE_REDACTED, context()).response)
    expect(output[0]).toMatchObject({ type: "reasoning", summary: [] })
    expect(decodeReasoning(String(output[0]?.["encrypted_content"]))).toEqual({ type: "redacted_thinking", data: REDACTED_DATA })
  })

  it("text, tool, text: two message items; a run of text blocks is one item", () => {
    const output = outputOf(toResponse(MESSAGE_TEXT_TOOL_TEXT, context()).response)
    expect(output.map((i) => i["type"])).toEqual(["message", "function_call", "message"])
    expect(output[0]?.["id"]).not.toBe(output[2]?.["id"])
    const texts = (output[2]?.["content"] as Array<{ text: string }>).map((p) => p.text)
    expect(texts).toEqual(["After, part one. ", "Part two."])
  })

  it("usage with cache tokens: input counts cache reads and writes", () => {
    const { response, usage } = toResponse(MESSAGE_CACHED, context())
    expect(usage).toEqual({ inputTokens: 20012, outputTokens: 50, cacheReadTokens: 18000, cacheCreationTokens: 2000, reasoningTokens: 0 })
    expect(response["usage"]).toEqual({
      input_tokens: 20012,
      input_tokens_details: { cached_tokens: 18000, cache_write_tokens: 2000 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 20062
    })
  })

  it("stop reasons: max_tokens and context window -> incomplete max_output_tokens; refusal -> content_filter", () => {
    for (const stop_reason of ["max_tokens", "model_context_window_exceeded"]) {
      const { response } = toResponse({ ...MESSAGE_TEXT, stop_reason }, context())
      expect(response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } })
      expect(outputOf(response)[0]?.["status"]).toBe("incomplete")
    }
    expect(toResponse({ ...MESSAGE_TEXT, stop_reason: "refusal" }, context()).response).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "content_filter" }
    })
    for (const stop_reason of ["end_turn", "tool_use", "stop_sequence", "pause_turn"]) {
      expect(toResponse({ ...MESSAGE_TEXT, stop_reason }, context()).response["status"]).toBe("completed")
    }
  })

  it("a call to a client custom tool comes back as custom_tool_call with the raw input", () => {
    const request = { model: "m", tools: [{ type: "custom", name: "apply_patch" }] }
    const patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    const message = { ...MESSAGE_TOOL_ONLY, content: [{ type: "tool_use" as const, id: "toolu_p", name: "apply_patch", input: { input: patch } }] }
    const [item] = outputOf(toResponse(message, context(request)).response)
    expect(item).toMatchObject({ type: "custom_tool_call", call_id: "toolu_p", name: "apply_patch", input: patch, status: "completed" })
    expect(String(item?.["id"])).toMatch(/^ctc_/)
  })

  it("restores a flattened namespace tool name", () => {
    const request = { model: "m", tools: [{ type: "namespace", name: "ns", description: "", tools: [{ type: "function", name: "child" }] }] }
    const message = { ...MESSAGE_TOOL_ONLY, content: [{ type: "tool_use" as const, id: "toolu_1", name: "ns__child", input: { a: 1 } }] }
    expect(outputOf(toResponse(message, context(request)).response)[0]).toMatchObject({
      name: "child",
      namespace: "ns",
      arguments: "{\"a\":1}"
    })
  })
})
