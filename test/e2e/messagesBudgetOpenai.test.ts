/**
 * The budget stop on the Messages door of an `openai` group (the answer translated from Responses)
 * is a `billing_error`, as on an `anthropic` group and as docs/errors.md says: Claude Code tells
 * its user to top up rather than retrying a stream it cannot pay for. Over real sockets, the
 * Anthropic SDK as the client.
 *
 * Prices make each output token cost 0.1 USD and input nothing, so a 1 USD balance with no
 * overdraft affords about ten of the simulator's ~20 answer tokens; the upstream sends one event at
 * a time.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fakeUpstreamConfig, type TestGateway } from "../support/gateway.js"
import { postMessages } from "../support/messagesGateway.js"
import { sseEvents, startSlowBudgetGateway } from "../support/streamBudget.js"

const KEY = "sk-test-openai-messages-budget-01"
const SDK_KEY = "sk-test-openai-messages-budget-02"

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    // One user per test, so each starts with 1 USD of its own.
    users: [{ name: "dora", balance_usd: 1, concurrency: 4 }, { name: "eve", balance_usd: 1, concurrency: 4 }],
    keys: [
      { key: KEY, user: "dora", group: "oa", name: "oa-messages" },
      { key: SDK_KEY, user: "eve", group: "oa", name: "oa-messages-sdk" }
    ],
    prices: [{ model: "gpt-5.4", input: 0, output: 100_000 }]
  }
}

describe("a Messages stream on an openai group that outruns its key's balance", () => {
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ gw, close } = await startSlowBudgetGateway(config))
  })
  afterAll(() => close())

  it("ends with an error event of type billing_error, mid-answer", async () => {
    const res = await postMessages(gw, KEY, {
      model: "gpt-5.4",
      max_tokens: 256,
      stream: true,
      messages: [{ role: "user", content: "tell me a long story about gateways" }]
    })
    expect(res.status).toBe(200)
    const events = sseEvents(await res.text())
    const last = events.at(-1) as { type: string; error?: { type?: string } }
    expect(last.type).toBe("error")
    expect(last.error?.type).toBe("billing_error")
    expect(events.some((e) => e.type === "content_block_delta")).toBe(true)
    expect(events.some((e) => e.type === "message_stop")).toBe(false)
  })

  it("the Anthropic SDK throws it as a billing error", async () => {
    const client = new Anthropic({ apiKey: SDK_KEY, baseURL: gw.url, maxRetries: 0 })
    const s = client.messages.stream({ model: "gpt-5.4", max_tokens: 256, messages: [{ role: "user", content: "another long story" }] })
    let text = ""
    s.on("text", (delta) => (text += delta))
    const error = await s.finalMessage().then(() => undefined, (e: unknown) => e)
    // Cut mid-answer, not refused before it began.
    expect(text.length).toBeGreaterThan(0)
    expect(error).toBeInstanceOf(Anthropic.APIError)
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: "error", error: { type: "billing_error" } })
  })
})
