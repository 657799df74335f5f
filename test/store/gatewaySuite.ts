/**
 * End to end on the SQL store: a real gateway (test/support/gateway.ts) over the simulator, its
 * usage read back through /v1/usage, across a restart, under 200 parallel requests, and for a
 * stream the client abandons half way.
 */
import { SqlClient } from "effect/sql"
import { Effect, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { costMicros } from "../../src/domain/pricing.js"
import { fromResponsesUsage } from "../../src/domain/upstreamJson.js"
import { sqlClientLayer } from "../../src/store/client.js"
import { sqlServices } from "../../src/store/Database.js"
import { simulatorUpstream } from "../../src/services/upstream/simulator.js"
import { Upstream } from "../../src/services/upstream/Upstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { postMessages } from "../support/messagesGateway.js"
import { SEARCHES, startToolCallUpstream } from "../support/toolCallUpstream.js"
import type { Backend, TestDatabase } from "./harness.js"

const config = {
  groups: [
    { name: "oa", platform: "openai" },
    { name: "an", platform: "anthropic" }
  ],
  users: [{ name: "erin", balance_usd: 50, concurrency: 500 }],
  keys: [
    { key: "sk-e2e-openai-000001", user: "erin", group: "oa", name: "e2e-oa" },
    { key: "sk-e2e-anthropic-0001", user: "erin", group: "an", name: "e2e-an" },
    { key: "sk-e2e-quota-0000001", user: "erin", group: "oa", name: "e2e-quota", quota_usd: 0.000001 },
    { key: "sk-e2e-disabled-00001", user: "erin", group: "oa", name: "e2e-disabled", status: "disabled" },
    { key: "sk-e2e-expired-000001", user: "erin", group: "oa", name: "e2e-expired", expires_at: "2020-01-01T00:00:00Z" }
  ],
  accounts: [
    { name: "sim-oa", platform: "openai", kind: "simulator", groups: ["oa"], concurrency: 500 },
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an"], concurrency: 500 }
  ]
}

const OA = "sk-e2e-openai-000001"
const AN = "sk-e2e-anthropic-0001"
const TOOLS_OA = "sk-e2e-tools-oa-00001"
const TOOLS_AN = "sk-e2e-tools-an-00001"

/** The simulator, one frame every 40 ms: slow enough to hang up on half way. */
const slowUpstream = Upstream.layerTest((account, request) =>
  Effect.map(simulatorUpstream.send(account, request), (response) => ({
    ...response,
    body: response.body.pipe(Stream.tap(() => Effect.sleep("40 millis")))
  }))
)

const post = async (gw: TestGateway, key: string, body: unknown) => {
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: res.status, text: await res.text() }
}

interface Totals {
  readonly requests: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cost: number
}

interface UsageBody {
  readonly status: string
  readonly mode: string
  readonly balance?: number
  readonly usage: { readonly today: Totals; readonly total: Totals }
  readonly model_stats?: ReadonlyArray<{ readonly model: string; readonly requests: number }>
  readonly daily_stats?: ReadonlyArray<{ readonly date: string; readonly requests: number }>
}

const usageOf = async (gw: TestGateway, key: string, query = "") => {
  const res = await fetch(`${gw.url}/v1/usage${query}`, { headers: { authorization: `Bearer ${key}` } })
  return { status: res.status, body: (await res.json()) as UsageBody & { error?: { code: string } } }
}

/** What the usage_events rows of `db` say, read with a connection of the test's own. */
const estimatedFlags = (db: TestDatabase): Promise<ReadonlyArray<number>> =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ estimated: number }>`SELECT estimated FROM usage_events ORDER BY at`).pipe(
      Effect.map((rows) => rows.map((r) => Number(r.estimated))),
      Effect.provide(sqlClientLayer(db.target))
    )
  )

const micros = (usd: number) => Math.round(usd * 1_000_000)

export const gatewaySuite = (makeBackend: () => Backend) => {
  let backend: Backend
  const open: Array<TestGateway> = []
  const start = async (db: TestDatabase, slow = false) => {
    const sql = sqlServices(db.target, { reportOrphans: false })
    const gw = await startGateway({
      config,
      services: slow ? { ...sql, upstream: slowUpstream } : sql,
      settings: { slotQueueLimit: 1000 }
    })
    open.push(gw)
    return gw
  }

  beforeAll(() => {
    backend = makeBackend()
  })
  afterAll(async () => {
    for (const gw of open) await gw.close().catch(() => undefined)
    await backend.cleanup()
  })

  describe("gateway on the SQL store", () => {
    it("a served request shows in /v1/usage, and a restart keeps the figures", async () => {
      const db = await backend.fresh()
      const first = await start(db)
      const answer = await post(first, OA, { model: "gpt-5.4", input: "Hello from the store test" })
      expect(answer.status).toBe(200)
      const cost = costMicros("gpt-5.4", fromResponsesUsage((JSON.parse(answer.text) as { usage: unknown }).usage), 1)
      expect(cost).toBeGreaterThan(0)
      const streamed = await post(first, AN, { model: "claude-sonnet-4-6", input: "Stream please", stream: true })
      expect(streamed.status).toBe(200)
      expect(streamed.text).toContain("response.completed")

      const before = await usageOf(first, OA)
      expect(before.status).toBe(200)
      expect(before.body.usage.total.requests).toBe(1)
      expect(before.body.usage.today.requests).toBe(1)
      expect(micros(before.body.usage.total.cost)).toBe(cost)
      expect(before.body.model_stats?.map((m) => m.model)).toEqual(["gpt-5.4"])
      const beforeAn = await usageOf(first, AN)
      expect(beforeAn.body.usage.total.requests).toBe(1)
      await first.close()

      // Both usages came from the upstream: neither row is an estimate.
      expect(await estimatedFlags(db)).toEqual([0, 0])

      const second = await start(db)
      expect((await usageOf(second, OA)).body).toEqual(before.body)
      expect((await usageOf(second, AN)).body).toEqual(beforeAn.body)
    })

    it("200 parallel requests on one key settle to exactly the sum of their costs", async () => {
      const gw = await start(await backend.fresh())
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) => post(gw, OA, { model: "gpt-5.4", input: `request ${i} ${"x".repeat(i * 3)}` }))
      )
      expect(answers.map((a) => a.status).filter((s) => s !== 200)).toEqual([])
      const expected = answers.reduce(
        (acc, a) => acc + costMicros("gpt-5.4", fromResponsesUsage((JSON.parse(a.text) as { usage: unknown }).usage), 1),
        0
      )
      const { body } = await usageOf(gw, OA)
      expect(body.usage.total.requests).toBe(200)
      expect(micros(body.usage.total.cost)).toBe(expected)
      expect(micros(body.balance ?? 0)).toBe(50_000_000 - expected)
    })

    it("a stream the client abandons half way still settles what was produced, marked as estimated", async () => {
      const db = await backend.fresh()
      const gw = await start(db, true)
      const controller = new AbortController()
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${OA}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "Tell me a long story about databases", stream: true }),
        signal: controller.signal
      })
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let seen = ""
      while (!seen.includes("response.output_text.delta")) {
        const chunk = await reader.read()
        if (chunk.done) break
        seen += decoder.decode(chunk.value)
      }
      expect(seen).not.toContain("response.completed")
      controller.abort()

      let body: UsageBody | undefined
      for (let i = 0; i < 100; i++) {
        body = (await usageOf(gw, OA)).body
        if (body.usage.total.requests > 0) break
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(body?.usage.total.requests).toBe(1)
      expect(body?.usage.total.output_tokens).toBeGreaterThan(0)
      expect(body?.usage.total.cost).toBeGreaterThan(0)
      expect(await estimatedFlags(db)).toEqual([1])
    })

    it("/v1/usage: day ranges, malformed dates, and which key statuses may read it", async () => {
      const gw = await start(await backend.fresh())
      expect((await post(gw, OA, { model: "gpt-5.4", input: "hi" })).status).toBe(200)
      const today = new Date().toISOString().slice(0, 10)
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
      expect((await usageOf(gw, OA, `?start_date=${today}&end_date=${today}`)).body.model_stats?.length).toBe(1)
      expect((await usageOf(gw, OA, `?start_date=${tomorrow}&end_date=${tomorrow}`)).body.model_stats).toEqual([])
      expect((await usageOf(gw, OA, `?start_date=${yesterday}&end_date=${tomorrow}`)).body.daily_stats?.map((d) => [d.date, d.requests]))
        .toEqual([[today, 1]])
      const past = await usageOf(gw, OA, `?end_date=${yesterday}`)
      expect(past.body.model_stats).toEqual([])
      expect(past.body.usage.total.requests).toBe(1) // today/total do not depend on the range
      const bad = await usageOf(gw, OA, "?start_date=2026-02-30")
      expect(bad.status).toBe(400)
      expect(bad.body.error?.code).toBe("invalid_date")

      // The tiny quota is used up by one request: the next is refused, /v1/usage still answers.
      expect((await post(gw, "sk-e2e-quota-0000001", { model: "gpt-5.4", input: "hi" })).status).toBe(200)
      expect((await post(gw, "sk-e2e-quota-0000001", { model: "gpt-5.4", input: "hi" })).status).toBe(402)
      const exhausted = await usageOf(gw, "sk-e2e-quota-0000001")
      expect(exhausted.status).toBe(200)
      expect(exhausted.body).toMatchObject({ mode: "quota_limited", status: "quota_exhausted" })

      const expired = await usageOf(gw, "sk-e2e-expired-000001")
      expect(expired.status).toBe(200)
      expect(expired.body.status).toBe("expired")
      expect((await post(gw, "sk-e2e-expired-000001", { model: "gpt-5.4", input: "hi" })).status).toBe(403)

      const disabled = await usageOf(gw, "sk-e2e-disabled-00001")
      expect(disabled.status).toBe(401)
      expect(disabled.body.error?.code).toBe("api_key_disabled")
    })
  })

  describe("what an answer costs beyond its tokens, and what the balance check sees before the call", () => {
    /** A gateway on the SQL store in front of an upstream whose answers report two web searches each. */
    const startWithTools = async () => {
      const upstream = await startToolCallUpstream()
      const gw = await startGateway({
        config: {
          groups: [{ name: "search", platform: "openai", allow_provider_tools: ["web_search"] }, {
            name: "search-an",
            platform: "anthropic",
            allow_provider_tools: ["web_search"]
          }],
          users: [{ name: "frank", balance_usd: 1 }],
          keys: [{ key: TOOLS_OA, user: "frank", group: "search" }, { key: TOOLS_AN, user: "frank", group: "search-an" }],
          accounts: [
            { name: "up-oa", platform: "openai", base_url: `${upstream.url}/v1`, api_key_env: "UP_OA", groups: ["search"] },
            { name: "up-an", platform: "anthropic", base_url: upstream.url, api_key_env: "UP_AN", groups: ["search-an"] }
          ],
          // Tokens free, searches $0.025 each; input of the "pricey" model $100 per million tokens.
          prices: [{ model: "free", input: 0, output: 0 }, { model: "pricey", input: 100, output: 0 }],
          tool_prices: { web_search: 25 }
        },
        env: { UP_OA: "sk-up-oa", UP_AN: "sk-up-an" },
        services: sqlServices((await backend.fresh()).target, { reportOrphans: false }),
        settings: { streamOverdraftMicros: 100_000 }
      })
      open.push(gw)
      return { gw, upstream }
    }

    it("each web search an answer reports is billed at the configured per-call price, JSON and stream, on both doors", async () => {
      const { gw, upstream } = await startWithTools()
      try {
        const tools = [{ type: "web_search" }]
        expect((await post(gw, TOOLS_OA, { model: "free", input: "look it up", tools })).status).toBe(200)
        expect((await post(gw, TOOLS_OA, { model: "free", input: "look it up", tools, stream: true })).status).toBe(200)
        const messages = await postMessages(gw, TOOLS_AN, {
          model: "free",
          max_tokens: 10,
          stream: true,
          tools: [{ type: "web_search_20250305", name: "web_search" }],
          messages: [{ role: "user", content: "look it up" }]
        })
        expect(messages.status).toBe(200)
        expect(await messages.text()).toContain("message_stop")

        const searches = 3 * SEARCHES
        let usage: UsageBody | undefined
        for (let i = 0; i < 100; i++) {
          const oa = (await usageOf(gw, TOOLS_OA)).body
          const an = (await usageOf(gw, TOOLS_AN)).body
          if (oa.usage.total.requests === 2 && an.usage.total.requests === 1) {
            usage = oa
            break
          }
          await new Promise((r) => setTimeout(r, 20))
        }
        expect(micros(usage?.usage.total.cost ?? 0)).toBe(2 * SEARCHES * 25_000)
        expect(micros(usage?.balance ?? 0)).toBe(1_000_000 - searches * 25_000)
      } finally {
        await upstream.close()
      }
    })

    it("a request whose input is estimated past the balance and the overdraft is refused 402; the upstream never hears it", async () => {
      const { gw, upstream } = await startWithTools()
      try {
        // 60,000 characters: 15,000 tokens at $100 per million, about 1.50 USD against 1 USD + 0.10.
        const refused = await post(gw, TOOLS_OA, { model: "pricey", input: "a".repeat(60_000) })
        expect(refused.status).toBe(402)
        expect((JSON.parse(refused.text) as { error: { code: string } }).error.code).toBe("insufficient_balance")
        expect(upstream.requests).toHaveLength(0)
        // About 1.05 USD: within the overdraft. A small one passes too.
        expect((await post(gw, TOOLS_OA, { model: "pricey", input: "a".repeat(42_000) })).status).toBe(200)
        expect((await post(gw, TOOLS_OA, { model: "pricey", input: "hi" })).status).toBe(200)
        expect(upstream.requests).toHaveLength(2)
      } finally {
        await upstream.close()
      }
    })
  })
}
