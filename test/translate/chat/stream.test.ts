/**
 * Responses streams -> Chat Completions chunks, checked two ways: the exact frames, and what the
 * openai SDK's `chat.completions.stream()` accumulates from them.
 */
import { describe, expect, it } from "@effect/vitest"
import { responsesStream } from "../messages/helpers.js"
import { type Ev, NOW, sdkFinal, translateChat } from "./helpers.js"

const chunk = (delta: Ev, finish: string | null = null) => ({
  id: "chatcmpl-0a1b2c",
  object: "chat.completion.chunk",
  created: 1795640788,
  model: "gpt-5.4",
  system_fingerprint: null,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
})

describe("ChatStreamTranslator", () => {
  it("streams text as content deltas after one role chunk, then the finish reason", async () => {
    const { out, translator } = translateChat(responsesStream([{ kind: "message", parts: [["Hello", " there!"]] }], { kind: "completed" }))
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello" }),
      chunk({ content: " there!" }),
      chunk({}, "stop")
    ])
    expect(translator.usage()).toMatchObject({ inputTokens: 1200, outputTokens: 85, cacheReadTokens: 1000, reasoningTokens: 40 })
    const { completion } = await sdkFinal(out)
    expect(completion?.choices[0]?.message.content).toBe("Hello there!")
    expect(completion?.choices[0]?.finish_reason).toBe("stop")
  })

  it("streams parallel tool calls under their own indexes, arguments in pieces", async () => {
    const events = responsesStream([
      { kind: "reasoning", id: "rs_1", summary: [["Plan", "ning"]], encrypted: "enc" },
      { kind: "call", id: "fc_1", callId: "call_a", name: "read", pieces: ["{\"path\":", "\"a\"}"] },
      { kind: "call", id: "fc_2", callId: "call_b", name: "read", pieces: ["{\"path\":\"b\"}"] }
    ], { kind: "completed" })
    const { out } = translateChat(events)
    expect(out).toContainEqual(chunk({ reasoning_content: "Plan" }))
    expect(out).toContainEqual(chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "read", arguments: "" } }] }))
    expect(out).toContainEqual(chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"path\":" } }] }))
    expect(out).toContainEqual(chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "read", arguments: "" } }] }))
    expect(out.at(-1)).toEqual(chunk({}, "tool_calls"))
    const { completion } = await sdkFinal(out)
    expect(completion?.choices[0]?.message.tool_calls).toEqual([
      { id: "call_a", type: "function", function: { name: "read", arguments: "{\"path\":\"a\"}" } },
      { id: "call_b", type: "function", function: { name: "read", arguments: "{\"path\":\"b\"}" } }
    ])
    expect(completion?.choices[0]?.finish_reason).toBe("tool_calls")
  })

  it("with include_usage: usage null on every chunk, then one chunk of usage and no choices", async () => {
    const { out } = translateChat(responsesStream([{ kind: "message", parts: [["ok"]] }], { kind: "completed" }), { includeUsage: true })
    expect(out.slice(0, -1).every((frame) => "usage" in frame && frame.usage === null)).toBe(true)
    expect(out.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 1200, completion_tokens: 85, total_tokens: 1285, prompt_tokens_details: { cached_tokens: 1000 }, completion_tokens_details: { reasoning_tokens: 40 } }
    })
    const { completion } = await sdkFinal(out)
    expect(completion?.usage?.prompt_tokens).toBe(1200)
  })

  it("without include_usage sends no usage, and still reads the usage for billing", () => {
    const { out, translator } = translateChat(responsesStream([{ kind: "message", parts: [["ok"]] }], { kind: "completed" }))
    expect(out.some((frame) => "usage" in frame)).toBe(false)
    expect(translator.usage()?.outputTokens).toBe(85)
  })

  it("a cut answer finishes with length, a filtered one with content_filter", () => {
    const cut = translateChat(responsesStream([{ kind: "message", parts: [["par"]] }], { kind: "incomplete", reason: "max_output_tokens" }))
    expect(cut.out.at(-1)).toEqual(chunk({}, "length"))
    const filtered = translateChat(responsesStream([], { kind: "incomplete", reason: "content_filter" }))
    expect(filtered.out.at(-1)).toEqual(chunk({}, "content_filter"))
  })

  it("a failed, errored or cut-off upstream ends with an error frame the SDK throws", async () => {
    for (const ending of [
      { kind: "failed", code: "server_error", message: "boom" },
      { kind: "error", code: "rate_limit_exceeded", message: "slow down" },
      { kind: "cut" }
    ] as const) {
      const { out } = translateChat(responsesStream([{ kind: "message", parts: [["part"]] }], ending))
      expect(out.at(-1)).toMatchObject({ error: { message: ending.kind === "cut" ? expect.stringContaining("ended before") : ending.message } })
      const result = await sdkFinal(out)
      expect(result.error).toBeInstanceOf(Error)
    }
  })

  it("never writes text twice, whatever the upstream leaves out", async () => {
    const full = responsesStream([{ kind: "message", parts: [["Hel", "lo"]] }, { kind: "call", id: "fc_1", callId: "call_a", name: "f", pieces: ["{}"] }], { kind: "completed" })
    const variants: Record<string, ReadonlyArray<Ev>> = {
      "no output_item.added": full.filter((e) => e["type"] !== "response.output_item.added"),
      "no deltas (whole items only)": full.filter((e) => !String(e["type"]).endsWith(".delta")),
      "no content_part events": full.filter((e) => !String(e["type"]).startsWith("response.content_part")),
      "no output_item.done": full.filter((e) => e["type"] !== "response.output_item.done")
    }
    for (const [name, events] of Object.entries(variants)) {
      const { completion } = await sdkFinal(translateChat(events).out)
      expect(completion?.choices[0]?.message.content, name).toBe("Hello")
      expect(completion?.choices[0]?.message.tool_calls, name).toEqual([{ id: "call_a", type: "function", function: { name: "f", arguments: "{}" } }])
    }
  })

  it("uses the clock's time when the upstream gives no creation time", () => {
    const events = responsesStream([{ kind: "message", parts: [["x"]] }], { kind: "completed" })
      .map((e) => e["type"] === "response.created" ? { ...e, response: { id: "resp_9" } } : e)
    const { out } = translateChat(events)
    expect(out[0]).toMatchObject({ id: "chatcmpl-9", created: NOW })
  })
})
