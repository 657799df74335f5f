/**
 * The balance check before the call sees what the request's input will cost: a key whose user has
 * 1 USD left sends an input estimated at about 1.50 USD (characters / 4 tokens at the model's input
 * price) and is refused 402 before any upstream call, on both doors; an input estimated within the
 * balance plus STREAM_OVERDRAFT_USD still passes, and so does a small one. Over real sockets, the
 * in-memory quota (test/store/gatewaySuite.ts runs the same on SQLite and PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../http/helpers.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { startToolCallUpstream, type ToolCallUpstream } from "../support/toolCallUpstream.js"

const OA = "sk-input-cost-oa-0001"
const AN = "sk-input-cost-an-0001"

/** USD 100 per million input tokens: 4 characters cost 100 µ$, 40,000 characters 1 USD. */
const config = (upstream: string) => ({
  groups: [{ name: "oa", platform: "openai" }, { name: "an", platform: "anthropic" }],
  users: [{ name: "one-dollar", balance_usd: 1 }],
  keys: [{ key: OA, user: "one-dollar", group: "oa" }, { key: AN, user: "one-dollar", group: "an" }],
  accounts: [
    { name: "up-oa", platform: "openai", base_url: `${upstream}/v1`, api_key_env: "UP_OA", groups: ["oa"] },
    { name: "up-an", platform: "anthropic", base_url: upstream, api_key_env: "UP_AN", groups: ["an"] }
  ],
  prices: [{ model: "pricey", input: 100, output: 100 }]
})

/** An input of `usd` at the price above (characters / 4 tokens). */
const inputCosting = (usd: number) => "a".repeat(Math.round(usd * 40_000))

describe("a request whose input costs more than the key can pay", () => {
  let upstream: ToolCallUpstream
  let gw: TestGateway

  beforeAll(async () => {
    upstream = await startToolCallUpstream()
    // The default overdraft, said here: what may be spent past the balance.
    gw = await startGateway({
      config: config(upstream.url),
      env: { UP_OA: "sk-up-oa", UP_AN: "sk-up-an" },
      settings: { streamOverdraftMicros: 100_000 }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const responses = (input: string, stream = false) => call(gw.url, "/v1/responses", { key: OA, body: { model: "pricey", input, stream } })
  const messages = (text: string) =>
    call(gw.url, "/v1/messages", {
      key: AN,
      body: { model: "pricey", max_tokens: 10, messages: [{ role: "user", content: text }] },
      headers: { "anthropic-version": "2023-06-01" }
    })

  it("is refused 402 insufficient_balance before any upstream call, on both doors", async () => {
    const before = upstream.requests.length
    for (const stream of [false, true]) {
      const res = await responses(inputCosting(1.5), stream)
      expect(res.status).toBe(402)
      const error = (res.json as { error: { type: string; code: string; message: string } }).error
      expect(error).toMatchObject({ type: "insufficient_quota", code: "insufficient_balance" })
      expect(error.message).toContain("1.50 USD")
    }
    const viaMessages = await messages(inputCosting(1.5))
    expect(viaMessages.status).toBe(402)
    expect(viaMessages.json).toMatchObject({ type: "error", error: { type: "billing_error", details: { error_code: "insufficient_balance" } } })
    expect(upstream.requests.length).toBe(before)
  })

  it("passes within the balance plus the overdraft, and a small request passes", async () => {
    const before = upstream.requests.length
    expect((await responses(inputCosting(1.05))).status).toBe(200)
    expect((await responses("hi")).status).toBe(200)
    expect((await messages("hi")).status).toBe(200)
    expect(upstream.requests.length).toBe(before + 3)
  })
})
