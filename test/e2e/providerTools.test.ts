/**
 * Answers the upstream bills beyond their tokens, over real sockets (a gateway in front of a
 * `node:http` upstream whose every answer reports two web searches):
 * - a tool the provider bills per call (web search ...) is refused 403 `tool_not_allowed` on a
 *   group that does not allow it, on every door that would pass it upstream (Responses over HTTP
 *   and WebSocket, Messages), and the upstream never hears the request; a translated path, which
 *   drops such tools, is not refused;
 * - on a group that allows it, each call the answer reports is billed at the configured per-call
 *   price (`tool_prices`), JSON and stream, on both doors: the key's balance drops by exactly that
 *   (the models cost nothing here, so the calls are all there is);
 * - `background: true` is refused 400 `background_not_supported` (its answer would carry no usage).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, waitFor } from "../http/helpers.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { SEARCHES, startToolCallUpstream, type ToolCallUpstream } from "../support/toolCallUpstream.js"
import { WsClient } from "../websocket/helpers.js"

/** USD per 1000 calls: $0.025 a search. */
const SEARCH_PRICE_PER_1K = 25
const SEARCH_MICROS = (SEARCH_PRICE_PER_1K * 1_000_000) / 1000

const KEYS = {
  plainOa: "sk-tools-plain-oa-0001",
  searchOa: "sk-tools-search-oa-001",
  plainAn: "sk-tools-plain-an-0001",
  searchAn: "sk-tools-search-an-001"
} as const

const config = (upstream: string) => ({
  groups: [
    { name: "plain-oa", platform: "openai" },
    { name: "search-oa", platform: "openai", allow_provider_tools: ["web_search"] },
    { name: "plain-an", platform: "anthropic" },
    { name: "search-an", platform: "anthropic", allow_provider_tools: ["web_search"] }
  ],
  users: [
    { name: "plain", balance_usd: 10 },
    { name: "oa", balance_usd: 10 },
    { name: "an", balance_usd: 10 }
  ],
  keys: [
    { key: KEYS.plainOa, user: "plain", group: "plain-oa" },
    { key: KEYS.searchOa, user: "oa", group: "search-oa" },
    { key: KEYS.plainAn, user: "plain", group: "plain-an" },
    { key: KEYS.searchAn, user: "an", group: "search-an" }
  ],
  accounts: [
    { name: "up-oa", platform: "openai", base_url: `${upstream}/v1`, api_key_env: "UP_OA", groups: ["plain-oa", "search-oa"] },
    { name: "up-an", platform: "anthropic", base_url: upstream, api_key_env: "UP_AN", groups: ["plain-an", "search-an"] }
  ],
  // The tokens are free: what a request costs is its searches.
  prices: [{ model: "gpt-free", input: 0, output: 0 }, { model: "claude-free", input: 0, output: 0 }],
  tool_prices: { web_search: SEARCH_PRICE_PER_1K }
})

interface UsageReport {
  readonly balance: number
  readonly usage: { readonly total: { readonly requests: number; readonly cost: number } }
}

const micros = (usd: number) => Math.round(usd * 1_000_000)

describe("tools the provider bills per call", () => {
  let upstream: ToolCallUpstream
  let gw: TestGateway

  beforeAll(async () => {
    upstream = await startToolCallUpstream()
    gw = await startGateway({ config: config(upstream.url), env: { UP_OA: "sk-up-oa", UP_AN: "sk-up-an" } })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const usage = async (key: string): Promise<UsageReport> => (await call(gw.url, "/v1/usage", { key })).json as UsageReport

  /** Runs `send`, waits for its settlement, and returns what it took from the key's balance, in µ$. */
  const charged = async (key: string, send: () => Promise<void>): Promise<number> => {
    const before = await usage(key)
    await send()
    await waitFor(async () => (await usage(key)).usage.total.requests === before.usage.total.requests + 1)
    return micros(before.balance) - micros((await usage(key)).balance)
  }

  const responses = (key: string, body: Record<string, unknown>) => call(gw.url, "/v1/responses", { key, body })
  const messages = (key: string, body: Record<string, unknown>) =>
    call(gw.url, "/v1/messages", { key, body, headers: { "anthropic-version": "2023-06-01" } })
  const search = { type: "web_search_20250305", name: "web_search", max_uses: 5 }
  const ask = { model: "claude-free", max_tokens: 100, messages: [{ role: "user", content: "look it up" }] }

  describe("a group that does not allow them refuses them before the upstream hears of it", () => {
    it("Responses over HTTP: 403 tool_not_allowed naming the tool", async () => {
      const before = upstream.requests.length
      for (const type of ["web_search", "web_search_preview", "file_search", "code_interpreter"]) {
        const res = await responses(KEYS.plainOa, { model: "gpt-free", input: "look it up", tools: [{ type }] })
        expect(res.status, type).toBe(403)
        const error = (res.json as { error: { type: string; code: string; message: string } }).error
        expect(error).toMatchObject({ type: "permission_error", code: "tool_not_allowed" })
        expect(error.message).toContain(`'${type.startsWith("web_search") ? "web_search" : type}'`)
      }
      expect(upstream.requests.length).toBe(before)
    })

    it("Responses over WebSocket: an error event 403 tool_not_allowed", async () => {
      const before = upstream.requests.length
      const client = await WsClient.withKey({ wsUrl: gw.url.replace(/^http/, "ws") }, KEYS.plainOa)
      try {
        const events = await client.turn({ model: "gpt-free", input: "look it up", tools: [{ type: "web_search" }] })
        expect(events).toMatchObject([{ type: "error", status: 403, error: { type: "permission_error", code: "tool_not_allowed" } }])
      } finally {
        await client.close()
      }
      expect(upstream.requests.length).toBe(before)
    })

    it("Messages: 403 permission_error with error_code tool_not_allowed, JSON and stream", async () => {
      const before = upstream.requests.length
      for (const stream of [false, true]) {
        const res = await messages(KEYS.plainAn, { ...ask, stream, tools: [search] })
        expect(res.status).toBe(403)
        expect(res.json).toMatchObject({ type: "error", error: { type: "permission_error", details: { error_code: "tool_not_allowed" } } })
      }
      for (const type of ["web_fetch_20250910", "code_execution_20250825"]) {
        const res = await messages(KEYS.plainAn, { ...ask, tools: [{ type, name: type.replace(/_\d+$/, "") }] })
        expect(res.status, type).toBe(403)
      }
      expect(upstream.requests.length).toBe(before)
    })

    it("a translated path drops such tools (translate/tools.ts): nothing to refuse, nothing billed per call", async () => {
      const before = upstream.requests.length
      const viaMessages = await responses(KEYS.plainAn, { model: "claude-free", input: "look it up", tools: [{ type: "web_search" }] })
      expect(viaMessages.status).toBe(200)
      const viaResponses = await messages(KEYS.plainOa, { ...ask, model: "gpt-free", tools: [search] })
      expect(viaResponses.status).toBe(200)
      const sent = upstream.requests.slice(before).map((r) => JSON.stringify(r.body))
      expect(sent).toHaveLength(2)
      for (const body of sent) expect(body).not.toContain("web_search")
    })
  })

  describe("a group that allows them pays for each call the answer reports", () => {
    const expected = SEARCHES * SEARCH_MICROS

    it("Responses JSON: web_search_call items", async () => {
      const cost = await charged(KEYS.searchOa, async () => {
        const res = await responses(KEYS.searchOa, { model: "gpt-free", input: "look it up", tools: [{ type: "web_search" }] })
        expect(res.status).toBe(200)
      })
      expect(cost).toBe(expected)
    })

    it("Responses stream: the web_search_call items it finished", async () => {
      const cost = await charged(KEYS.searchOa, async () => {
        const res = await responses(KEYS.searchOa, { model: "gpt-free", input: "look it up", stream: true, tools: [{ type: "web_search_preview" }] })
        expect(res.status).toBe(200)
        expect(res.text).toContain("response.completed")
      })
      expect(cost).toBe(expected)
    })

    it("Responses over WebSocket", async () => {
      const client = await WsClient.withKey({ wsUrl: gw.url.replace(/^http/, "ws") }, KEYS.searchOa)
      try {
        const cost = await charged(KEYS.searchOa, async () => {
          const events = await client.turn({ model: "gpt-free", input: "look it up", tools: [{ type: "web_search" }] })
          expect(events.at(-1)?.type).toBe("response.completed")
        })
        expect(cost).toBe(expected)
      } finally {
        await client.close()
      }
    })

    it("Messages JSON: usage.server_tool_use", async () => {
      const cost = await charged(KEYS.searchAn, async () => {
        const res = await messages(KEYS.searchAn, { ...ask, tools: [search] })
        expect(res.status).toBe(200)
      })
      expect(cost).toBe(expected)
    })

    it("Messages stream: message_delta's usage.server_tool_use", async () => {
      const cost = await charged(KEYS.searchAn, async () => {
        const res = await messages(KEYS.searchAn, { ...ask, stream: true, tools: [search] })
        expect(res.status).toBe(200)
        expect(res.text).toContain("message_stop")
      })
      expect(cost).toBe(expected)
    })

    it("/v1/usage reports the calls' cost", async () => {
      const report = await usage(KEYS.searchAn)
      expect(micros(report.usage.total.cost)).toBe(report.usage.total.requests * expected)
    })
  })

  it("background: true is refused 400 background_not_supported, and the upstream never hears it", async () => {
    const before = upstream.requests.length
    for (const stream of [false, true]) {
      const res = await responses(KEYS.searchOa, { model: "gpt-free", input: "later", background: true, stream })
      expect(res.status).toBe(400)
      expect(res.json).toMatchObject({ error: { type: "invalid_request_error", code: "background_not_supported", param: "background" } })
    }
    expect((await responses(KEYS.searchOa, { model: "gpt-free", input: "now", background: false })).status).toBe(200)
    expect(upstream.requests.length).toBe(before + 1)
  })
})
