/**
 * Tools the provider bills per call (src/domain/providerTools.ts) as the pure parts read them: which
 * request tools they are on each wire format, the calls each answer shape reports (Responses items,
 * Anthropic's usage.server_tool_use and server_tool_use blocks), their exact price with the tokens'
 * (config `tool_prices`, the group's multiplier), and the balance check before the call
 * (services/quota/eligibility.ts `affordable`) that refuses an input the key cannot pay.
 */
import { Cause, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { charge } from "../../src/domain/pricing.js"
import {
  firstDenied,
  messagesToolCalls,
  messagesToolOf,
  providerToolsIn,
  responsesToolCalls,
  responsesToolOf,
  toolPricesOf
} from "../../src/domain/providerTools.js"
import { fromResponsesAnswer } from "../../src/domain/upstreamJson.js"
import { emptyUsage, withToolCalls } from "../../src/domain/usage.js"
import { messagesProviderTools } from "../../src/endpoints/messages/policy.js"
import { providerTools } from "../../src/endpoints/responses/policy.js"
import { affordable } from "../../src/domain/spend.js"
import { remaining, spendLimit } from "../../src/services/quota/eligibility.js"
import { foldUsage } from "../../src/translate/output.js"
import { SseText } from "../../src/endpoints/kit/eventOut.js"
import { PassthroughStream } from "../../src/endpoints/responses/passthroughStream.js"
import { MessagesPassthrough } from "../../src/endpoints/messages/passthroughStream.js"
import { encodeEvent, SseDecoder } from "../../src/domain/sse.js"
import { testPrincipal } from "../support/principal.js"

describe("which request tools the provider bills per call", () => {
  it("Responses hosted tools, every dated web search name included; functions and other tools are not", () => {
    expect(["web_search", "web_search_preview", "web_search_preview_2025_03_11", "web_search_2025_08_26"].map(responsesToolOf))
      .toEqual(["web_search", "web_search", "web_search", "web_search"])
    expect(["file_search", "code_interpreter"].map(responsesToolOf)).toEqual(["file_search", "code_interpreter"])
    expect(["function", "custom", "image_generation", "mcp", "local_shell", undefined, 3].map(responsesToolOf))
      .toEqual([undefined, undefined, undefined, undefined, undefined, undefined, undefined])
  })

  it("Anthropic server tools by their versioned types; client tools are not", () => {
    expect(["web_search_20250305", "web_fetch_20250910", "code_execution_20250825"].map(messagesToolOf))
      .toEqual(["web_search", "web_fetch", "code_execution"])
    expect(["custom", "bash_20250124", "text_editor_20250728", "memory_20250818", undefined].map(messagesToolOf))
      .toEqual([undefined, undefined, undefined, undefined, undefined])
  })

  it("each once, in order; only where the door passes them upstream (a translation drops them)", () => {
    const tools = [{ type: "web_search_preview" }, { type: "function", name: "f" }, { type: "web_search" }, { type: "file_search" }]
    expect(providerToolsIn(tools, responsesToolOf)).toEqual(["web_search", "file_search"])
    expect(providerTools({ tools }, "openai")).toEqual(["web_search", "file_search"])
    expect(providerTools({ tools }, "anthropic")).toEqual([])
    const server = [{ type: "web_search_20250305", name: "web_search" }, { name: "f", input_schema: {} }]
    expect(messagesProviderTools({ tools: server }, "anthropic")).toEqual(["web_search"])
    expect(messagesProviderTools({ tools: server }, "antigravity")).toEqual(["web_search"])
    expect(messagesProviderTools({ tools: server }, "openai")).toEqual([])
  })

  it("a group allows none unless it lists them", () => {
    expect(firstDenied(undefined, ["web_search"])).toBe("web_search")
    expect(firstDenied(["web_search"], ["web_search", "file_search"])).toBe("file_search")
    expect(firstDenied(["web_search", "file_search"], ["file_search"])).toBeUndefined()
    expect(firstDenied(undefined, [])).toBeUndefined()
  })
})

describe("the calls an answer reports", () => {
  it("Responses: the call items of its output, whatever else it holds", () => {
    const output = [
      { type: "web_search_call", id: "ws_1" },
      { type: "reasoning" },
      { type: "web_search_call", id: "ws_2" },
      { type: "file_search_call" },
      { type: "code_interpreter_call" },
      { type: "message" }
    ]
    expect(responsesToolCalls(output)).toEqual({ web_search: 2, file_search: 1, code_interpreter: 1 })
    expect(fromResponsesAnswer({ output, usage: { input_tokens: 5, output_tokens: 2 } })).toMatchObject({
      inputTokens: 5,
      outputTokens: 2,
      toolCalls: { web_search: 2, file_search: 1, code_interpreter: 1 }
    })
    // No calls: the usage has no toolCalls at all.
    expect(fromResponsesAnswer({ output: [{ type: "message" }], usage: { input_tokens: 5 } })).not.toHaveProperty("toolCalls")
  })

  it("Anthropic: usage.server_tool_use as cumulative counts, code execution as blocks", () => {
    const start = foldUsage(emptyUsage, { input_tokens: 10, output_tokens: 1, server_tool_use: { web_search_requests: 0 } })
    const end = foldUsage(start, { output_tokens: 30, server_tool_use: { web_search_requests: 3, web_fetch_requests: 1 } })
    expect(end.toolCalls).toEqual({ web_search: 3, web_fetch: 1 })
    // A later event without server_tool_use keeps the counts.
    expect(foldUsage(end, { output_tokens: 31 }).toolCalls).toEqual({ web_search: 3, web_fetch: 1 })
    expect(foldUsage(emptyUsage, { input_tokens: 1, server_tool_use: null })).not.toHaveProperty("toolCalls")
    const blocks = [
      { type: "server_tool_use", name: "bash_code_execution" },
      { type: "server_tool_use", name: "text_editor_code_execution" },
      { type: "server_tool_use", name: "web_search" },
      { type: "tool_use", name: "code_execution" },
      { type: "text", text: "hi" }
    ]
    expect(messagesToolCalls(blocks)).toEqual({ code_execution: 2, web_search: 1 })
    // Two readings of one answer (its usage, its blocks): each tool's larger count, never their sum.
    expect(withToolCalls(end, messagesToolCalls(blocks)).toolCalls).toEqual({ web_search: 3, web_fetch: 1, code_execution: 2 })
  })
})

describe("the calls a stream reports", () => {
  const feed = (state: { onFrame: PassthroughStream["onFrame"] }, events: ReadonlyArray<Record<string, unknown>>) => {
    const text = events.map((e) => encodeEvent({ ...e, type: String(e["type"]) })).join("")
    for (const frame of new SseDecoder().push(new TextEncoder().encode(text))) state.onFrame(frame, new SseText())
  }
  const search = (i: number) => ({ type: "web_search_call", id: `ws_${i}`, status: "completed" })

  it("Responses: the calls it finished count even when it is cut before response.completed", () => {
    const state = new PassthroughStream("m")
    feed(state, [
      { type: "response.created", response: { id: "resp_1", output: [] } },
      { type: "response.output_item.done", output_index: 0, item: search(0) },
      { type: "response.output_item.done", output_index: 1, item: search(1) }
    ])
    expect(state.reportedUsage()).toBeUndefined()
    expect(state.toolCallsSoFar()).toEqual({ web_search: 2 })
    feed(state, [{ type: "response.completed", response: { id: "resp_1", output: [search(0), search(1)], usage: { input_tokens: 3 } } }])
    expect(state.reportedUsage()?.toolCalls).toEqual({ web_search: 2 })
  })

  it("Messages: server_tool_use blocks count before message_delta's usage says, and never twice", () => {
    const state = new MessagesPassthrough("m")
    feed(state, [
      { type: "message_start", message: { model: "m", usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: "content_block_start", index: 0, content_block: { type: "server_tool_use", id: "s1", name: "web_search", input: {} } },
      { type: "content_block_start", index: 1, content_block: { type: "server_tool_use", id: "s2", name: "bash_code_execution", input: {} } }
    ])
    expect(state.toolCallsSoFar()).toEqual({ web_search: 1, code_execution: 1 })
    feed(state, [{ type: "message_delta", delta: {}, usage: { output_tokens: 9, server_tool_use: { web_search_requests: 1 } } }])
    expect(state.reportedUsage()?.toolCalls).toEqual({ web_search: 1, code_execution: 1 })
  })
})

describe("the price of the calls", () => {
  const tokens = { ...emptyUsage, inputTokens: 1000, outputTokens: 100 }

  it("adds each call at its per-call price to the tokens' cost, exactly, scaled by the group's multiplier", () => {
    const prices = [{ model: "m", price: { input: 2, output: 8, cacheRead: 2, cacheWrite: 2 } }]
    const plain = charge("m", tokens, 1, prices).cost
    expect(plain).toBe(2000 + 800)
    const calls = { ...tokens, toolCalls: { web_search: 3, file_search: 2 } }
    // Defaults: web search $10 and file search $2.50 per 1000 calls.
    expect(charge("m", calls, 1, prices).cost).toBe(plain + 3 * 10_000 + 2 * 2_500)
    expect(charge("m", calls, 1.5, prices).cost).toBe(Math.round((plain + 35_000) * 1.5))
    const configured = toolPricesOf({ web_search: 25, file_search: 0 })
    expect(charge("m", calls, 1, prices, undefined, configured).cost).toBe(plain + 3 * 25_000)
  })

  it("a fraction of a micro-dollar per call is summed before the one rounding", () => {
    const cheap = toolPricesOf({ web_search: 0.0004 }) // 0.4 µ$ a call
    const usage = { ...emptyUsage, toolCalls: { web_search: 5 } }
    expect(charge("m", usage, 1, [{ model: "m", price: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } }], undefined, cheap).cost).toBe(2)
  })
})

describe("the balance check before the call", () => {
  const now = Date.UTC(2026, 0, 1)
  const costOf = (usage: typeof emptyUsage) => usage.inputTokens * 10 // 10 µ$ a token
  const codeOf = (e: Effect.Effect<void, { readonly code: string }>) => {
    const exit = Effect.runSyncExit(e)
    if (Exit.isSuccess(exit)) return "ok"
    const error = Cause.findErrorOption(exit.cause)
    return error._tag === "Some" ? error.value.code : "defect"
  }
  const limitOf = (figures: Parameters<typeof remaining>[1], quotaMicros?: number) => {
    const left = Effect.runSync(remaining(testPrincipal({ quotaMicros }), figures, now))
    const limit = spendLimit(left, costOf)
    if (limit === undefined) throw new Error("no limit")
    return limit
  }

  it("refuses an input estimated past what is left plus the overdraft, by the bound that is least", () => {
    const balance = limitOf({ quotaUsedMicros: 0, balanceMicros: 1_000_000 })
    expect(codeOf(affordable(balance, 100_000, 100_000))).toBe("ok") // 1.00 USD
    expect(codeOf(affordable(balance, 110_000, 100_000))).toBe("ok") // 1.10: the overdraft's edge
    expect(codeOf(affordable(balance, 110_001, 100_000))).toBe("insufficient_balance")
    const quota = limitOf({ quotaUsedMicros: 0, balanceMicros: 1_000_000 }, 500_000)
    expect(codeOf(affordable(quota, 60_001, 100_000))).toBe("key_quota_exhausted")
  })

  it("says what the request would cost and what is left", () => {
    const balance = limitOf({ quotaUsedMicros: 0, balanceMicros: 1_000_000 })
    expect(balance.shortOf(1_500_000).message).toBe("The request's estimated cost (about 1.50 USD) exceeds the account balance (1.00 USD)")
  })
})
