/**
 * A stream that outruns what its key may still spend ends with `insufficient_quota` (issue: a
 * stalled reader was billed 696k estimated tokens and took a balance from 1000 to -392 USD): on the
 * Responses door over HTTP and WebSocket a `response.failed`, on the Messages door an `error` event;
 * what was sent is billed, and the upstream stops. A key with room gets the whole answer.
 *
 * Prices make each output token cost 0.1 USD and input nothing, so a 1 USD balance with no overdraft
 * affords about ten of the simulator's ~20 answer tokens; the upstream sends one event at a time.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import WebSocket from "ws"
import { type HostileUpstream, startHostileUpstream } from "../support/hostileUpstream.js"
import { fakeUpstreamConfig, type TestGateway } from "../support/gateway.js"
import { balanceOf, type Sse, sseEvents, startBudgetGateway, startSlowBudgetGateway } from "../support/streamBudget.js"

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    // One user per door, so each test starts with 1 USD of its own.
    users: [
      { name: "alice", balance_usd: 1, concurrency: 4 },
      { name: "bob", balance_usd: 1, concurrency: 4 },
      { name: "carol", balance_usd: 1, concurrency: 4 },
      { name: "rich", balance_usd: 1000, concurrency: 4 }
    ],
    keys: [
      { key: "sk-test-openai-0001", user: "alice", group: "oa", name: "oa-key" },
      { key: "sk-test-anthropic-0001", user: "bob", group: "an", name: "an-key" },
      { key: "sk-test-openai-ws-001", user: "carol", group: "oa", name: "oa-ws" },
      { key: "sk-test-openai-rich-01", user: "rich", group: "oa", name: "oa-rich" }
    ],
    prices: [
      { model: "gpt-5.4", input: 0, output: 100_000 },
      { model: "claude-sonnet-4-6", input: 0, output: 100_000 }
    ]
  }
}

describe("a stream that outruns its key's balance", () => {
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ gw, close } = await startSlowBudgetGateway(config))
  })
  afterAll(() => close())

  const stream = async (key: string) => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "tell me a long story about gateways", stream: true })
    })
    expect(res.status).toBe(200)
    return sseEvents(await res.text())
  }

  it("Responses over HTTP: response.failed insufficient_quota before the answer is complete, and what was sent is billed", async () => {
    const before = await balanceOf(gw, "sk-test-openai-0001")
    const events = await stream("sk-test-openai-0001")
    const last = events.at(-1) as { type: string; response?: { error?: { code?: string } } }
    expect(last.type).toBe("response.failed")
    expect(last.response?.error?.code).toBe("insufficient_quota")
    expect(events.some((e) => e.type === "response.completed")).toBe(false)
    const sent = events.filter((e) => e.type === "response.output_text.delta").map((e) => String(e["delta"])).join("")
    expect(sent.length).toBeGreaterThan(0)
    // What was sent is billed (0.1 USD a token): the balance went down to about nothing, not far below.
    expect(before).toBe(1)
    const after = await balanceOf(gw, "sk-test-openai-0001")
    expect(after).toBeLessThan(before)
    expect(after).toBeGreaterThan(-1)
  })

  it("a key with room gets the whole answer", async () => {
    const events = await stream("sk-test-openai-rich-01")
    expect(events.at(-1)?.type).toBe("response.completed")
  })

  it("Messages door: the stream ends with an error event the Anthropic SDK throws as a billing error", async () => {
    const client = new Anthropic({ apiKey: "sk-test-anthropic-0001", baseURL: gw.url, maxRetries: 0 })
    const s = client.messages.stream({ model: "claude-sonnet-4-6", max_tokens: 256, messages: [{ role: "user", content: "tell me a long story" }] })
    let text = ""
    s.on("text", (delta) => (text += delta))
    const error = await s.finalMessage().then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    expect(JSON.stringify((error as InstanceType<typeof Anthropic.APIError>).error)).toContain("billing_error")
    // Cut mid-answer, not refused before it began.
    expect(text.length).toBeGreaterThan(0)
  })

  it("a WebSocket turn ends with response.failed insufficient_quota and the connection stays open", async () => {
    const ws = new WebSocket(`${gw.url.replace(/^http/, "ws")}/v1/responses`, { headers: { authorization: "Bearer sk-test-openai-ws-001" } })
    await new Promise((resolve, reject) => {
      ws.once("open", resolve)
      ws.once("error", reject)
    })
    const turn = () =>
      new Promise<Array<Sse>>((resolve) => {
        const seen: Array<Sse> = []
        const on = (data: Buffer) => {
          const event = JSON.parse(String(data)) as Sse
          seen.push(event)
          if (["response.completed", "response.failed", "error"].includes(event.type)) {
            ws.off("message", on)
            resolve(seen)
          }
        }
        ws.on("message", on)
        ws.send(JSON.stringify({ type: "response.create", model: "gpt-5.4", input: "tell me a long story over ws" }))
      })
    const events = await turn()
    const last = events.at(-1) as { type: string; response?: { error?: { code?: string } } }
    expect(last.type).toBe("response.failed")
    expect(last.response?.error?.code).toBe("insufficient_quota")
    expect(events.some((e) => e.type === "response.output_text.delta")).toBe(true)
    expect(ws.readyState).toBe(WebSocket.OPEN)
    ws.close()
  })
})

describe("one giant delta that alone outruns the key's balance (issue 32, item 6)", () => {
  /** About 1 MB of ordinary words: 250,000 tokens at four bytes a token, 25,000 USD at these prices. */
  const GIANT = "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(18_000)
  /** `text` in reads of 64 KB, as a provider's server would write one event that large. */
  const reads = (text: string): Array<string> => {
    const out: Array<string> = []
    for (let at = 0; at < text.length; at += 64 * 1024) out.push(text.slice(at, at + 64 * 1024))
    return out
  }
  const frame = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

  const responsesStream = (): Array<string> => [
    frame("response.created", { sequence_number: 0, response: responseObject({ id: "resp_giant", createdAt: 1, status: "in_progress", model: "gpt-5.4" }) }),
    frame("response.output_text.delta", { sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "Once" }),
    ...reads(frame("response.output_text.delta", { sequence_number: 2, item_id: "msg_1", output_index: 0, content_index: 0, delta: GIANT })),
    frame("response.completed", { sequence_number: 3, response: responseObject({ id: "resp_giant", createdAt: 1, status: "completed", model: "gpt-5.4" }) })
  ]

  const messagesStream = (): Array<string> => [
    frame("message_start", { message: { id: "msg_giant", type: "message", role: "assistant", model: "claude-sonnet-4-6", content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
    frame("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    frame("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Once" } }),
    ...reads(frame("content_block_delta", { index: 0, delta: { type: "text_delta", text: GIANT } })),
    frame("content_block_stop", { index: 0 }),
    frame("message_stop", {})
  ]

  let upstream: HostileUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startHostileUpstream()
    upstream.setScript((request) => ({
      _tag: "Chunks",
      contentType: "text/event-stream",
      chunks: request.path.startsWith("/v1/responses") ? responsesStream() : messagesStream()
    }))
    gw = await startBudgetGateway(config(upstream.url))
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it.each([
    ["Responses", "/v1/responses", "sk-test-openai-0001", { model: "gpt-5.4", input: "one long word please", stream: true }],
    ["Messages", "/v1/messages", "sk-test-anthropic-0001", { model: "claude-sonnet-4-6", max_tokens: 64, messages: [{ role: "user", content: "one long word please" }], stream: true }]
  ])("%s door: cut with insufficient_quota while the event arrives, never relayed whole, billed within the balance", async (door, path, key, body) => {
    expect(await balanceOf(gw, key)).toBe(1)
    const res = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text.length).toBeLessThan(GIANT.length)
    const last = sseEvents(text).at(-1) as Record<string, unknown>
    if (door === "Responses") expect(last).toMatchObject({ type: "response.failed", response: { error: { code: "insufficient_quota" } } })
    else expect(last).toMatchObject({ type: "error", error: { type: "billing_error" } })
    // What was sent ("Once") is billed; nothing like the 25,000 USD the giant event would cost.
    const after = await balanceOf(gw, key)
    expect(after).toBeLessThan(1)
    expect(after).toBeGreaterThanOrEqual(0)
  })
})
