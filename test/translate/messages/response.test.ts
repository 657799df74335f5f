/**
 * Responses JSON answer -> Anthropic message; the thinking signature codec; and the multi-turn
 * round trip that makes thinking replayable: a reasoning item goes out as a thinking block and
 * comes back, in the next request, as the same reasoning item.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { fromResponsesUsage } from "../../../src/domain/upstreamJson.js"
import { messagesToResponses } from "../../../src/translate/messages/request.js"
import { responseToMessage } from "../../../src/translate/messages/response.js"
import { decodeThinkingSignature, encodeThinkingSignature } from "../../../src/translate/messages/signature.js"
import { USAGE } from "./helpers.js"

const ctx = { model: "claude-sonnet-4-5" }

const answer = (output: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  id: "resp_68af3c",
  object: "response",
  status: "completed",
  model: "gpt-5.4",
  output,
  usage: USAGE,
  ...extra
})

const REASONING = {
  id: "rs_68af3d",
  type: "reasoning",
  summary: [{ type: "summary_text", text: "**Checking files**" }, { type: "summary_text", text: "Listing first." }],
  encrypted_content: "gAAAAABo-encrypted"
}

describe("responseToMessage", () => {
  it("maps reasoning, text and calls in order, with usage in Anthropic's terms", () => {
    const { message, usage } = responseToMessage(answer([
      REASONING,
      { id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Let me look.", annotations: [] }] },
      { id: "fc_1", type: "function_call", status: "completed", call_id: "call_ls", name: "Bash", arguments: "{\"command\":\"ls\"}" }
    ]), ctx)
    expect(message).toEqual({
      id: "msg_68af3c",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [
        {
          type: "thinking",
          thinking: "**Checking files**\n\nListing first.",
          signature: encodeThinkingSignature({ id: "rs_68af3d", encrypted_content: "gAAAAABo-encrypted" })
        },
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "call_ls", name: "Bash", input: { command: "ls" } }
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 200, output_tokens: 85, cache_read_input_tokens: 1000, cache_creation_input_tokens: 0 }
    })
    // Billing counts as the rest of the gateway does: input includes the cached reads.
    expect(usage).toEqual(fromResponsesUsage(USAGE))
    expect(usage).toEqual({ inputTokens: 1200, outputTokens: 85, cacheReadTokens: 1000, cacheCreationTokens: 0, reasoningTokens: 40 })
  })

  it("ends a plain answer with end_turn, and a cut one with max_tokens", () => {
    const text = { id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi" }] }
    expect(responseToMessage(answer([text]), ctx).message.stop_reason).toBe("end_turn")
    const cut = responseToMessage(answer([text], { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }), ctx)
    expect(cut.message.stop_reason).toBe("max_tokens")
    const filtered = responseToMessage(answer([text], { status: "incomplete", incomplete_details: { reason: "content_filter" } }), ctx)
    expect(filtered.message.stop_reason).toBe("refusal")
  })

  it("never hands over a call the model did not finish", () => {
    const { message } = responseToMessage(answer([
      { id: "fc_1", type: "function_call", status: "incomplete", call_id: "call_1", name: "Bash", arguments: "{\"command\":\"rm -" }
    ], { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }), ctx)
    expect(message.content).toEqual([])
    expect(message.stop_reason).toBe("max_tokens")
  })

  it("turns arguments that are not a JSON object into {}", () => {
    const call = (args: string) =>
      responseToMessage(answer([{ type: "function_call", status: "completed", call_id: "c", name: "f", arguments: args }]), ctx).message.content[0]
    expect(call("{\"a\":")).toEqual({ type: "tool_use", id: "c", name: "f", input: {} })
    expect(call("[1,2]")).toEqual({ type: "tool_use", id: "c", name: "f", input: {} })
    expect(call("")).toEqual({ type: "tool_use", id: "c", name: "f", input: {} })
  })

  it("shows refusals as text and skips items it has no block for", () => {
    const { message } = responseToMessage(answer([
      { type: "web_search_call", id: "ws_1", status: "completed" },
      { type: "message", role: "assistant", content: [{ type: "refusal", refusal: "I can't help with that." }] }
    ]), ctx)
    expect(message.content).toEqual([{ type: "text", text: "I can't help with that." }])
  })

  it("keeps a summary without encrypted content as unreplayable thinking, and drops empty reasoning", () => {
    const summaryOnly = { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "thought" }] }
    const empty = { id: "rs_2", type: "reasoning", summary: [] }
    const rawText = { id: "rs_3", type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "raw" }] }
    const { message } = responseToMessage(answer([summaryOnly, empty, rawText]), ctx)
    expect(message.content).toEqual([{ type: "thinking", thinking: "thought", signature: "" }, { type: "thinking", thinking: "raw", signature: "" }])
  })

  it("reads a response without usage or id", () => {
    const { message, usage } = responseToMessage({ output: [] }, ctx)
    expect(message.id).toMatch(/^msg_[0-9a-f]{24}$/)
    expect(message.usage).toEqual({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 })
    expect(usage.inputTokens).toBe(0)
  })
})

describe("thinking signatures", () => {
  it("decode what they encode", () => {
    fc.assert(fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (id, encrypted_content) => {
      expect(decodeThinkingSignature(encodeThinkingSignature({ id, encrypted_content }))).toEqual({ id, encrypted_content })
    }))
  })

  it("refuse anything else without throwing", () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.string().map((s) => `mgr1.${s}`), fc.jsonValue()), (sig) => {
      const decoded = decodeThinkingSignature(sig)
      if (decoded !== undefined) expect(encodeThinkingSignature(decoded).startsWith("mgr1.")).toBe(true)
    }))
    const b64 = (v: unknown) => `mgr1.${Buffer.from(JSON.stringify(v)).toString("base64url")}`
    expect(decodeThinkingSignature("EqQBCkYIBxgCKkA")).toBeUndefined()
    expect(decodeThinkingSignature("mgr1.")).toBeUndefined()
    expect(decodeThinkingSignature("mgr1.!!!")).toBeUndefined()
    expect(decodeThinkingSignature(b64({ i: "rs_1" }))).toBeUndefined()
    expect(decodeThinkingSignature(b64({ i: "", e: "x" }))).toBeUndefined()
    expect(decodeThinkingSignature(b64(["rs_1", "x"]))).toBeUndefined()
    expect(decodeThinkingSignature(undefined)).toBeUndefined()
  })
})

describe("multi-turn thinking round trip", () => {
  it("replays the reasoning item the previous answer carried", () => {
    const first = { role: "user", content: "list the files" }
    const { message } = responseToMessage(answer([
      REASONING,
      { id: "fc_1", type: "function_call", status: "completed", call_id: "call_ls", name: "Bash", arguments: "{\"command\":\"ls\"}" }
    ]), ctx)
    // Claude Code sends the assistant content back as it got it, then the tool result.
    const next = messagesToResponses({
      model: "gpt-5.4",
      max_tokens: 32000,
      thinking: { type: "adaptive" },
      messages: [
        first,
        { role: "assistant", content: JSON.parse(JSON.stringify(message.content)) },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_ls", content: "a.txt" }] }
      ]
    })
    if (Result.isFailure(next)) throw new Error(next.failure.message)
    expect(next.success["input"]).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "list the files" }] },
      {
        type: "reasoning",
        id: REASONING.id,
        encrypted_content: REASONING.encrypted_content,
        summary: [{ type: "summary_text", text: "**Checking files**\n\nListing first." }]
      },
      { type: "function_call", call_id: "call_ls", name: "Bash", arguments: "{\"command\":\"ls\"}" },
      { type: "function_call_output", call_id: "call_ls", output: "a.txt" }
    ])
  })
})
