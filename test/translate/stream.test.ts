import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import {
  type AnthropicStreamEvent,
  decodeReasoning,
  finishStream,
  initialStreamState,
  responsesToMessages,
  stepStream,
  streamUsage,
  translateStream
} from "../../src/translate/index.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import {
  CACHED_USAGE,
  CUT_IN_TOOL,
  ERROR_MID_STREAM,
  MAX_TOKENS,
  PARALLEL_TOOLS,
  REDACTED,
  REDACTED_DATA,
  TEXT_ONLY,
  TEXT_TOOL_TEXT,
  THINKING_SIGNATURE,
  THINKING_TEXT,
  THINKING_TOOL,
  TOOL_ONLY
} from "./fixtures.js"
import { context, last, ofType, outputOf, runStream, terminal } from "./helpers.js"

describe("stream translation: recorded upstream streams", () => {
  it("text only: lifecycle, every delta forwarded as it came, full output on completed", () => {
    const out = runStream(TEXT_ONLY)
    expect(checkResponsesStream(out)).toEqual([])
    expect(out.slice(0, 2).map((e) => e.type)).toEqual(["response.created", "response.in_progress"])
    expect(ofType(out, "response.output_text.delta").map((e) => e["delta"])).toEqual(["Hel", "lo", " world"])
    const response = terminal(out)
    expect(last(out).type).toBe("response.completed")
    expect(response["id"]).toBe("resp_test0001")
    expect(response["model"]).toBe("claude-sonnet-4-5")
    const [message] = outputOf(response)
    expect(message).toMatchObject({
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Hello world", annotations: [], logprobs: [] }]
    })
    expect(String(message?.["id"])).toMatch(/^msg_/)
    expect(response["usage"]).toEqual({
      input_tokens: 25,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 12,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 37
    })
  })

  it("a ping as the very first upstream event still yields response.created first", () => {
    const out = runStream([{ type: "ping" }, ...TEXT_ONLY])
    expect(checkResponsesStream(out)).toEqual([])
    expect(out[0]?.type).toBe("response.created")
  })

  it("tool-only turn: one function_call with the upstream id as call_id and the exact arguments", () => {
    const out = runStream(TOOL_ONLY)
    expect(checkResponsesStream(out)).toEqual([])
    const deltas = ofType(out, "response.function_call_arguments.delta").map((e) => e["delta"])
    expect(deltas).toEqual(["{\"loc", "ation\": \"Pa", "ris\"}"])
    expect(ofType(out, "response.function_call_arguments.done")[0]).toMatchObject({
      name: "get_weather",
      arguments: "{\"location\": \"Paris\"}"
    })
    const output = outputOf(terminal(out))
    expect(output).toHaveLength(1)
    expect(output[0]).toMatchObject({
      type: "function_call",
      call_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      name: "get_weather",
      arguments: "{\"location\": \"Paris\"}",
      status: "completed"
    })
    expect(String(output[0]?.["id"])).toMatch(/^fc_/)
  })

  it("parallel tool calls: text at index 0, calls at 1 and 2; a call without input gets \"{}\"", () => {
    const out = runStream(PARALLEL_TOOLS)
    expect(checkResponsesStream(out)).toEqual([])
    const output = outputOf(terminal(out))
    expect(output.map((i) => i["type"])).toEqual(["message", "function_call", "function_call"])
    expect(output.slice(1).map((i) => [i["call_id"], i["name"], i["arguments"]])).toEqual([
      ["toolu_01A", "get_weather", "{\"location\":\"Paris\"}"],
      ["toolu_01B", "get_time", "{}"]
    ])
    expect(ofType(out, "response.output_item.added").map((e) => e["output_index"])).toEqual([0, 1, 2])
  })

  it("thinking + tool use: summary deltas stream, the signature lands in encrypted_content", () => {
    const out = runStream(THINKING_TOOL)
    expect(checkResponsesStream(out)).toEqual([])
    expect(ofType(out, "response.reasoning_summary_text.delta").map((e) => e["delta"])).toEqual([
      "The user wants the weather.",
      " I should call get_weather."
    ])
    const output = outputOf(terminal(out))
    expect(output.map((i) => i["type"])).toEqual(["reasoning", "message", "function_call"])
    const reasoning = output[0] ?? {}
    expect(reasoning["summary"]).toEqual([{ type: "summary_text", text: THINKING_TEXT }])
    expect(decodeReasoning(String(reasoning["encrypted_content"]))).toEqual({
      type: "thinking",
      thinking: THINKING_TEXT,
      signature: THINKING_SIGNATURE
    })
    expect(terminal(out)["usage"]).toMatchObject({ output_tokens: 95, output_tokens_details: { reasoning_tokens: 30 } })
  })

  it("round trip: the streamed output fed back as input rebuilds the exact thinking block before the tool_use", () => {
    const out = runStream(THINKING_TOOL)
    const output = outputOf(terminal(out))
    const call = output[2] ?? {}
    const body = {
      model: "claude-sonnet-4-5",
      reasoning: { effort: "high" },
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "Weather in Paris?" }] },
        ...output.map((item) => (item["type"] === "reasoning" ? { ...item, content: null } : item)),
        { type: "function_call_output", call_id: call["call_id"], output: "{\"temp\":18}" }
      ]
    }
    const request = responsesToMessages(body, { upstreamModel: "claude-sonnet-4-5-20250929" })
    expect(request._tag).toBe("Success")
    if (request._tag !== "Success") return
    expect(request.success.thinking).toEqual({ type: "enabled", budget_tokens: 10240 })
    expect(request.success.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: THINKING_TEXT, signature: THINKING_SIGNATURE },
        { type: "text", text: "Let me look that up." },
        { type: "tool_use", id: "toolu_01Think", name: "get_weather", input: { location: "Paris" } }
      ]
    })
    expect(request.success.messages[2]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_01Think", content: "{\"temp\":18}", cache_control: { type: "ephemeral" } }]
    })
  })

  it("redacted thinking: the whole reasoning item goes out at once and carries the data", () => {
    const out = runStream(REDACTED)
    expect(checkResponsesStream(out)).toEqual([])
    const types = out.map((e) => e.type)
    const added = types.indexOf("response.output_item.added")
    expect(types[added + 1]).toBe("response.output_item.done")
    const reasoning = outputOf(terminal(out))[0] ?? {}
    expect(reasoning["summary"]).toEqual([])
    expect(decodeReasoning(String(reasoning["encrypted_content"]))).toEqual({ type: "redacted_thinking", data: REDACTED_DATA })
  })

  it("max_tokens: response.incomplete with reason max_output_tokens, the cut message marked incomplete", () => {
    const out = runStream(MAX_TOKENS)
    expect(checkResponsesStream(out)).toEqual([])
    expect(last(out).type).toBe("response.incomplete")
    const response = terminal(out)
    expect(response["status"]).toBe("incomplete")
    expect(response["incomplete_details"]).toEqual({ reason: "max_output_tokens" })
    expect(outputOf(response)[0]).toMatchObject({ status: "incomplete", content: [{ text: "Once upon a time there" }] })
  })

  it("upstream error event: the open text is closed, then response.failed (no completed, no bare error)", () => {
    const out = runStream(ERROR_MID_STREAM)
    expect(checkResponsesStream(out)).toEqual([])
    const types = out.map((e) => e.type)
    expect(types).not.toContain("response.completed")
    expect(types).not.toContain("error")
    const response = terminal(out)
    expect(last(out).type).toBe("response.failed")
    expect(response["error"]).toEqual({ code: "server_error", message: "Overloaded" })
    expect(outputOf(response)).toEqual([expect.objectContaining({ type: "message", content: [expect.objectContaining({ text: "Partial ans" })] })])
  })

  it("rate limit error event maps to rate_limit_exceeded", () => {
    const out = runStream([
      ...TEXT_ONLY.slice(0, 3),
      { type: "error", error: { type: "rate_limit_error", message: "Number of request tokens has exceeded your per-minute rate limit" } }
    ])
    expect(checkResponsesStream(out)).toEqual([])
    expect(terminal(out)["error"]).toMatchObject({ code: "rate_limit_exceeded" })
  })

  it("stream cut inside a tool call: response.failed, and the half-built call is never finished", () => {
    const out = runStream(CUT_IN_TOOL)
    expect(checkResponsesStream(out)).toEqual([])
    expect(last(out).type).toBe("response.failed")
    expect(ofType(out, "response.function_call_arguments.done")).toEqual([])
    const doneTypes = ofType(out, "response.output_item.done").map((e) => (e["item"] as Record<string, unknown>)["type"])
    expect(doneTypes).toEqual(["message"])
    expect(outputOf(terminal(out)).map((i) => i["type"])).toEqual(["message"])
  })

  it("stream cut after all blocks closed but before message_stop still fails (Codex must retry)", () => {
    const cut = TEXT_ONLY.slice(0, -1)
    const out = runStream(cut)
    expect(checkResponsesStream(out)).toEqual([])
    expect(last(out).type).toBe("response.failed")
  })

  it("an upstream that sends nothing still yields a valid failed stream", () => {
    const out = runStream([])
    expect(checkResponsesStream(out)).toEqual([])
    expect(out.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.failed"])
  })

  it("usage with cache tokens: input includes cache reads and writes; streamUsage agrees", () => {
    let state = initialStreamState(context())
    for (const e of CACHED_USAGE) state = stepStream(state, e)[0]
    expect(streamUsage(state)).toEqual({
      inputTokens: 20012,
      outputTokens: 50,
      cacheReadTokens: 18000,
      cacheCreationTokens: 2000,
      reasoningTokens: 0
    })
    const out = runStream(CACHED_USAGE)
    expect(terminal(out)["usage"]).toEqual({
      input_tokens: 20012,
      input_tokens_details: { cached_tokens: 18000, cache_write_tokens: 2000 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 20062
    })
  })

  it("streamUsage bills a partial stream by what was seen so far", () => {
    let state = initialStreamState(context())
    for (const e of CUT_IN_TOOL) state = stepStream(state, e)[0]
    expect(streamUsage(state)).toMatchObject({ inputTokens: 25, outputTokens: 1 })
  })

  it("text, tool, text: two message items around the function call", () => {
    const out = runStream(TEXT_TOOL_TEXT)
    expect(checkResponsesStream(out)).toEqual([])
    const output = outputOf(terminal(out))
    expect(output.map((i) => i["type"])).toEqual(["message", "function_call", "message"])
    expect(output[0]?.["id"]).not.toBe(output[2]?.["id"])
    expect(output[2]).toMatchObject({ content: [{ text: "After." }] })
  })

  it("restores namespaced and renamed tool names on the way back", () => {
    const request = {
      model: "claude-sonnet-4-5",
      tools: [{ type: "namespace", name: "multi_agent_v1", description: "agents", tools: [{ type: "function", name: "spawn_agent" }] }]
    }
    const events: Array<AnthropicStreamEvent> = TOOL_ONLY.map((e) =>
      e.type === "content_block_start"
        ? { ...e, content_block: { type: "tool_use", id: "toolu_ns", name: "multi_agent_v1__spawn_agent", input: {} } }
        : e
    )
    const out = runStream(events, context(request))
    expect(checkResponsesStream(out)).toEqual([])
    expect(outputOf(terminal(out))[0]).toMatchObject({ name: "spawn_agent", namespace: "multi_agent_v1" })
    expect(ofType(out, "response.function_call_arguments.done")[0]?.["name"]).toBe("spawn_agent")
  })

  it("a client custom tool streams as custom_tool_call with the decoded raw input", () => {
    const request = { model: "claude-sonnet-4-5", tools: [{ type: "custom", name: "apply_patch" }] }
    const patch = "*** Begin Patch\n*** End Patch"
    const json = JSON.stringify({ input: patch })
    const events: Array<AnthropicStreamEvent> = [
      TOOL_ONLY[0] as AnthropicStreamEvent,
      { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_p", name: "apply_patch", input: {} } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: json.slice(0, 7) } },
      { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: json.slice(7) } },
      ...TOOL_ONLY.slice(-3)
    ]
    const out = runStream(events, context(request))
    expect(checkResponsesStream(out)).toEqual([])
    expect(ofType(out, "response.function_call_arguments.delta")).toEqual([])
    expect(ofType(out, "response.custom_tool_call_input.done")[0]?.["input"]).toBe(patch)
    expect(outputOf(terminal(out))).toEqual([
      expect.objectContaining({ type: "custom_tool_call", call_id: "toolu_p", name: "apply_patch", input: patch })
    ])
  })

  it("nothing more after message_stop, whatever arrives or however it ends", () => {
    let state = initialStreamState(context())
    for (const e of TEXT_ONLY) state = stepStream(state, e)[0]
    expect(stepStream(state, { type: "content_block_start", index: 5, content_block: { type: "text", text: "" } })[1]).toEqual([])
    expect(finishStream(state, { _tag: "Eof" })).toEqual([])
    expect(finishStream(state, { _tag: "Failed", code: "server_error", message: "x" })).toEqual([])
  })

  it("echoes the request's settings in every lifecycle response", () => {
    const request = {
      model: "claude-sonnet-4-5",
      instructions: "Be brief.",
      temperature: 0.3,
      parallel_tool_calls: false,
      metadata: { run: "42" },
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
      tool_choice: "required"
    }
    const out = runStream(TEXT_ONLY, context(request))
    for (const e of ofType(out, "response.created").concat(ofType(out, "response.completed"))) {
      expect(e["response"]).toMatchObject({
        instructions: "Be brief.",
        temperature: 0.3,
        parallel_tool_calls: false,
        metadata: { run: "42" },
        tools: request.tools,
        tool_choice: "required",
        error: null,
        incomplete_details: null
      })
    }
  })
})

describe("translateStream", () => {
  const onError = (e: string) => ({ code: "server_error", message: `upstream: ${e}` })

  it.effect("translates a whole upstream stream", () =>
    Effect.gen(function*() {
      const out = yield* Stream.runCollect(translateStream(Stream.fromIterable(TEXT_ONLY), context(), onError))
      expect(checkResponsesStream(out)).toEqual([])
      expect(last(out).type).toBe("response.completed")
    }))

  it.effect("an upstream failure becomes response.failed through onError, and the stream succeeds", () =>
    Effect.gen(function*() {
      const upstream = Stream.fromIterable(TEXT_ONLY.slice(0, 4)).pipe(Stream.concat(Stream.fail("socket hang up")))
      const out = yield* Stream.runCollect(translateStream(upstream, context(), onError))
      expect(checkResponsesStream(out)).toEqual([])
      expect(terminal(out)["error"]).toEqual({ code: "server_error", message: "upstream: socket hang up" })
    }))

  it.effect("an upstream that ends without message_stop becomes response.failed", () =>
    Effect.gen(function*() {
      const out = yield* Stream.runCollect(translateStream(Stream.fromIterable(CUT_IN_TOOL), context(), onError))
      expect(checkResponsesStream(out)).toEqual([])
      expect(last(out).type).toBe("response.failed")
    }))

  it.effect("a defect in the upstream stream also ends in response.failed", () =>
    Effect.gen(function*() {
      const upstream = Stream.fromIterable(TEXT_ONLY.slice(0, 2)).pipe(Stream.concat(Stream.die(new Error("boom"))))
      const out = yield* Stream.runCollect(translateStream(upstream, context(), onError))
      expect(checkResponsesStream(out)).toEqual([])
      expect(last(out).type).toBe("response.failed")
    }))
})
