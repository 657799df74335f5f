/**
 * Recorded Responses streams -> Anthropic stream events, checked three ways: the exact events,
 * the grammar, and what the Anthropic SDK's `messages.stream()` accumulates from them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { simulateResponses } from "../../../src/services/upstream/simulator/index.js"
import { messagesToResponses } from "../../../src/translate/messages/request.js"
import { encodeThinkingSignature } from "../../../src/translate/messages/signature.js"
import { MessagesStreamTranslator } from "../../../src/translate/messages/stream.js"
import { type Ev, grammarViolations, responsesStream, sdkAccumulate, translate, USAGE } from "./helpers.js"

const USAGE_OUT = { input_tokens: 200, output_tokens: 85, cache_read_input_tokens: 1000, cache_creation_input_tokens: 0 }

/** A gpt-5 text answer as OpenAI streams it, obfuscation padding and all. */
const RECORDED_TEXT: ReadonlyArray<Ev> = [
  { type: "response.created", sequence_number: 0, response: { id: "resp_0d5c", object: "response", created_at: 1795640788, status: "in_progress", model: "gpt-5.4-2026-03-05", output: [], usage: null } },
  { type: "response.in_progress", sequence_number: 1, response: { id: "resp_0d5c", object: "response", created_at: 1795640788, status: "in_progress", model: "gpt-5.4-2026-03-05", output: [], usage: null } },
  { type: "response.output_item.added", sequence_number: 2, output_index: 0, item: { id: "msg_0d5d", type: "message", status: "in_progress", content: [], role: "assistant" } },
  { type: "response.content_part.added", sequence_number: 3, item_id: "msg_0d5d", output_index: 0, content_index: 0, part: { type: "output_text", annotations: [], logprobs: [], text: "" } },
  { type: "response.output_text.delta", sequence_number: 4, item_id: "msg_0d5d", output_index: 0, content_index: 0, delta: "Hello", logprobs: [], obfuscation: "k3Jd9a2" },
  { type: "response.output_text.delta", sequence_number: 5, item_id: "msg_0d5d", output_index: 0, content_index: 0, delta: " there!", logprobs: [], obfuscation: "Zp1" },
  { type: "response.output_text.done", sequence_number: 6, item_id: "msg_0d5d", output_index: 0, content_index: 0, text: "Hello there!", logprobs: [] },
  { type: "response.content_part.done", sequence_number: 7, item_id: "msg_0d5d", output_index: 0, content_index: 0, part: { type: "output_text", annotations: [], logprobs: [], text: "Hello there!" } },
  { type: "response.output_item.done", sequence_number: 8, output_index: 0, item: { id: "msg_0d5d", type: "message", status: "completed", content: [{ type: "output_text", annotations: [], logprobs: [], text: "Hello there!" }], role: "assistant" } },
  {
    type: "response.completed",
    sequence_number: 9,
    response: {
      id: "resp_0d5c",
      object: "response",
      created_at: 1795640788,
      status: "completed",
      model: "gpt-5.4-2026-03-05",
      output: [{ id: "msg_0d5d", type: "message", status: "completed", content: [{ type: "output_text", annotations: [], logprobs: [], text: "Hello there!" }], role: "assistant" }],
      usage: { input_tokens: 19, input_tokens_details: { cached_tokens: 0 }, output_tokens: 11, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 30 }
    }
  }
]

const REASONING_THEN_CALL = responsesStream([
  { kind: "reasoning", id: "rs_1", summary: [["**Plan", "ning**"], ["List files."]], encrypted: "gAAAAB-enc" },
  { kind: "call", id: "fc_1", callId: "call_ls", name: "Bash", pieces: ["{\"comm", "and\":\"ls -la\"}"] }
], { kind: "completed" })

const SIG = encodeThinkingSignature({ id: "rs_1", encrypted_content: "gAAAAB-enc" })

const expectGrammar = (out: ReadonlyArray<Record<string, unknown>>) => expect(grammarViolations(out)).toEqual([])

const finalMessage = async (out: Parameters<typeof sdkAccumulate>[0]) => {
  const r = await sdkAccumulate(out)
  if ("error" in r) throw r.error
  return r.message
}

describe("MessagesStreamTranslator", () => {
  it("translates a recorded text stream", async () => {
    const { out, translator } = translate(RECORDED_TEXT)
    expect(out).toEqual([
      {
        type: "message_start",
        message: {
          id: "msg_0d5c",
          type: "message",
          role: "assistant",
          model: "claude-sonnet-4-5",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
        }
      },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " there!" } },
      { type: "content_block_stop", index: 0 },
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { input_tokens: 19, output_tokens: 11, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
      },
      { type: "message_stop" }
    ])
    expect(translator.usage()).toEqual({ inputTokens: 19, outputTokens: 11, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 })
    expect(translator.outputText()).toBe("Hello there!")
    const message = await finalMessage(out)
    expect(message.content).toEqual([{ type: "text", text: "Hello there!" }])
    expect(message.stop_reason).toBe("end_turn")
    expect(message.usage).toMatchObject({ input_tokens: 19, output_tokens: 11 })
  })

  it("streams reasoning as a signed thinking block, then the call", async () => {
    const { out } = translate(REASONING_THEN_CALL)
    expectGrammar(out)
    expect(out.slice(1)).toEqual([
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "**Plan" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "ning**" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "\n\nList files." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: SIG } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "call_ls", name: "Bash", input: {} } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{\"comm" } },
      { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "and\":\"ls -la\"}" } },
      { type: "content_block_stop", index: 1 },
      { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: USAGE_OUT },
      { type: "message_stop" }
    ])
    const message = await finalMessage(out)
    expect(message.content).toEqual([
      { type: "thinking", thinking: "**Planning**\n\nList files.", signature: SIG },
      { type: "tool_use", id: "call_ls", name: "Bash", input: { command: "ls -la" } }
    ])
    expect(message.stop_reason).toBe("tool_use")
    expect(message.usage).toMatchObject(USAGE_OUT)
  })

  it("opens a thinking block for reasoning with no summary, to carry its signature", async () => {
    const { out } = translate(responsesStream([
      { kind: "reasoning", id: "rs_1", summary: [], encrypted: "gAAAAB-enc" },
      { kind: "message", parts: [["Done."]] }
    ], { kind: "completed" }))
    expectGrammar(out)
    const message = await finalMessage(out)
    expect(message.content).toEqual([{ type: "thinking", thinking: "", signature: SIG }, { type: "text", text: "Done." }])
  })

  it("sends nothing for reasoning with neither summary nor encrypted content", async () => {
    const { out } = translate(responsesStream([
      { kind: "reasoning", id: "rs_1", summary: [] },
      { kind: "message", parts: [["Hi"]] }
    ], { kind: "completed" }))
    expectGrammar(out)
    expect((await finalMessage(out)).content).toEqual([{ type: "text", text: "Hi" }])
  })

  it("keeps text, calls and text in order, and parallel calls apart", async () => {
    const { out } = translate(responsesStream([
      { kind: "message", parts: [["Checking", " both."], ["Second part."]] },
      { kind: "call", id: "fc_1", callId: "call_a", name: "Read", pieces: ["{\"file_path\":\"a\"}"] },
      { kind: "call", id: "fc_2", callId: "call_b", name: "Read", pieces: [] },
      { kind: "message", parts: [["Then more."]] }
    ], { kind: "completed" }))
    expectGrammar(out)
    const message = await finalMessage(out)
    expect(message.content).toEqual([
      { type: "text", text: "Checking both." },
      { type: "text", text: "Second part." },
      { type: "tool_use", id: "call_a", name: "Read", input: { file_path: "a" } },
      { type: "tool_use", id: "call_b", name: "Read", input: {} },
      { type: "text", text: "Then more." }
    ])
    expect(message.stop_reason).toBe("tool_use")
  })

  it("ends a cut answer with max_tokens", async () => {
    const { out } = translate(responsesStream([{ kind: "message", parts: [["Long"]] }], { kind: "incomplete", reason: "max_output_tokens" }))
    expectGrammar(out)
    expect((await finalMessage(out)).stop_reason).toBe("max_tokens")
  })

  it("ends a failed response with an error event the SDK throws", async () => {
    const { out, translator } = translate(responsesStream(
      [{ kind: "message", parts: [["Partial"]] }],
      { kind: "failed", code: "server_error", message: "The model crashed" }
    ))
    expectGrammar(out)
    expect(out.at(-1)).toEqual({ type: "error", error: { type: "api_error", message: "The model crashed" } })
    expect(out.map((e) => e.type)).not.toContain("message_stop")
    expect(translator.usage()?.outputTokens).toBe(85)
    const r = await sdkAccumulate(out)
    expect("error" in r && r.error.message).toContain("The model crashed")
  })

  it("maps error events, flat or nested, to Anthropic error types", () => {
    const last = (events: ReadonlyArray<Ev>) => translate(events).out.at(-1)
    const start = RECORDED_TEXT.slice(0, 2)
    expect(last([...start, { type: "error", code: "rate_limit_exceeded", message: "Slow down", param: null }])).toEqual({
      type: "error",
      error: { type: "rate_limit_error", message: "Slow down" }
    })
    expect(last([...start, { type: "error", error: { type: "server_is_overloaded", message: "Busy" } }])).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: "Busy" }
    })
    expect(last([...start, { type: "error", code: "context_length_exceeded", message: "Too long" }])).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "Too long" }
    })
  })

  it("ends a stream that stops early with an error, even mid-call", async () => {
    const cut = responsesStream([{ kind: "call", id: "fc_1", callId: "call_1", name: "Bash", pieces: ["{\"command\":\"rm -r"] }], { kind: "cut" })
    // Cut after the first arguments delta: no done, no terminal event.
    const events = cut.slice(0, cut.findIndex((e) => e["type"] === "response.function_call_arguments.delta") + 1)
    const { out, translator } = translate(events)
    expectGrammar(out)
    expect(out.at(-1)).toEqual({ type: "error", error: { type: "api_error", message: "The upstream stream ended before the response was complete" } })
    expect(translator.usage()).toBeUndefined()
    expect(translator.outputText()).toBe("{\"command\":\"rm -r")
    expect("error" in (await sdkAccumulate(out))).toBe(true)
    const failed = translate(events, { _tag: "Failed", code: "rate_limit_exceeded", message: "Upstream said 429" }).out
    expect(failed.at(-1)).toEqual({ type: "error", error: { type: "rate_limit_error", message: "Upstream said 429" } })
  })

  it("sends nothing after the end", () => {
    const t = new MessagesStreamTranslator({ model: "m", messageId: "msg_given" })
    const out = RECORDED_TEXT.flatMap((e) => [...t.step(e)])
    expect((out[0] as { message: { id: string } }).message.id).toBe("msg_given")
    expect(t.step({ type: "response.output_text.delta", output_index: 0, content_index: 0, delta: "late" })).toEqual([])
    expect(t.step({ type: "error", code: "server_error", message: "x" })).toEqual([])
    expect(t.finish({ _tag: "Eof" })).toEqual([])
  })

  it("sends whole items that came without deltas", async () => {
    const events: Array<Ev> = [
      { type: "response.created", response: { id: "resp_1" } },
      { type: "response.output_item.added", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [] } },
      { type: "response.output_item.done", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "thought" }], encrypted_content: "enc" } },
      { type: "response.output_item.added", output_index: 1, item: { id: "msg_1", type: "message", role: "assistant", content: [] } },
      { type: "response.output_item.done", output_index: 1, item: { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "whole" }] } },
      { type: "response.output_item.added", output_index: 2, item: { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "" } },
      { type: "response.output_item.done", output_index: 2, item: { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "{\"x\":1}" } },
      { type: "keepalive" },
      { type: "response.completed", response: { id: "resp_1", status: "completed", usage: USAGE } }
    ]
    const { out } = translate(events)
    expectGrammar(out)
    expect(out.map((e) => e.type)).toContain("ping")
    expect((await finalMessage(out)).content).toEqual([
      { type: "thinking", thinking: "thought", signature: encodeThinkingSignature({ id: "rs_1", encrypted_content: "enc" }) },
      { type: "text", text: "whole" },
      { type: "tool_use", id: "call_1", name: "f", input: { x: 1 } }
    ])
  })

  it("closes a block the upstream never finished before the message ends", async () => {
    const events = responsesStream([{ kind: "message", parts: [["no done event"]] }], { kind: "completed" })
      .filter((e) => e["type"] !== "response.output_item.done")
    const { out } = translate(events)
    expectGrammar(out)
    expect((await finalMessage(out)).content).toEqual([{ type: "text", text: "no done event" }])
  })

  it("never sends text twice (nor loses it) whatever events the upstream leaves out", async () => {
    const full = responsesStream([
      { kind: "reasoning", id: "rs_1", summary: [["Think", "ing"], ["More."]], encrypted: "gAAAAB-enc" },
      { kind: "message", parts: [["Hel", "lo"], [" again"]] },
      { kind: "call", id: "fc_1", callId: "call_1", name: "Bash", pieces: ["{\"command\"", ":\"ls\"}"] },
      { kind: "message", parts: [["Done", "."]] }
    ], { kind: "completed" })
    const expected = (await finalMessage(translate(full).out)).content
    expect(expected).toEqual([
      { type: "thinking", thinking: "Thinking\n\nMore.", signature: encodeThinkingSignature({ id: "rs_1", encrypted_content: "gAAAAB-enc" }) },
      { type: "text", text: "Hello" },
      { type: "text", text: " again" },
      { type: "tool_use", id: "call_1", name: "Bash", input: { command: "ls" } },
      { type: "text", text: "Done." }
    ])
    // Every event an upstream might leave out, alone and in every combination: only the deltas and
    // the terminal event are kept whole.
    const omittable = [
      "response.output_item.added",
      "response.output_item.done",
      "response.content_part.added",
      "response.content_part.done",
      "response.output_text.done",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.done",
      "response.function_call_arguments.done",
      "response.in_progress"
    ]
    for (let mask = 1; mask < 1 << omittable.length; mask++) {
      const left = new Set(omittable.filter((_, i) => (mask & (1 << i)) !== 0))
      const { out } = translate(full.filter((e) => !left.has(e["type"] as string)))
      expect(grammarViolations(out), [...left].join(", ")).toEqual([])
      // Without output_item.done the reasoning's signature comes only with the terminal event,
      // after its block closed: that block stays unsigned (never a second, empty one).
      const unsigned = expected.map((b) => b.type === "thinking" && left.has("response.output_item.done") ? { ...b, signature: "" } : b)
      // Without either item event a call's name and id come only with the terminal event: the
      // call is sent then, whole, after the text that followed it.
      const calledLast = left.has("response.output_item.added") && left.has("response.output_item.done")
        ? [...unsigned.filter((b) => b.type !== "tool_use"), ...unsigned.filter((b) => b.type === "tool_use")]
        : unsigned
      expect((await finalMessage(out)).content, [...left].join(", ")).toEqual(calledLast)
    }
  })

  it("sends an item that came only in the terminal event's output, once", async () => {
    const full = responsesStream([{ kind: "message", parts: [["only ", "at the end"]] }], { kind: "completed" })
    const { out } = translate(full.filter((e) => ["response.created", "response.completed"].includes(e["type"] as string)))
    expectGrammar(out)
    expect((await finalMessage(out)).content).toEqual([{ type: "text", text: "only at the end" }])
  })

  it("answers a translated Claude Code request end to end with the Responses simulator", async () => {
    const request = messagesToResponses({
      model: "gpt-5.4",
      max_tokens: 32000,
      stream: true,
      system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
      tools: [{ name: "Bash", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }],
      thinking: { type: "adaptive" },
      messages: [{ role: "user", content: [{ type: "text", text: "run ls" }] }]
    })
    if (Result.isFailure(request)) throw new Error(request.failure.message)
    const { events } = simulateResponses(request.success, { createdAt: 1795640788 })
    const { out, translator } = translate(events)
    expectGrammar(out)
    const message = await finalMessage(out)
    expect(message.stop_reason).toBe("tool_use")
    expect(message.content).toHaveLength(1)
    expect(message.content[0]).toMatchObject({ type: "tool_use", name: "Bash" })
    expect(Object.keys((message.content[0] as { input: Record<string, unknown> }).input)).toEqual(["command"])
    expect(translator.usage()?.outputTokens).toBeGreaterThan(0)
  })
})
