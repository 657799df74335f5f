/**
 * GET /v1/usage (DESIGN.md "GET /v1/usage"): totals and model stats that reflect served requests,
 * quota_limited vs unrestricted, date-range validation.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope, postResponses, readEvents } from "./helpers.js"

const QUOTA_KEY = "sk-usage-quota-0001"
const WALLET_KEY = "sk-usage-wallet-0002"
const IDLE_KEY = "sk-usage-idle-0003"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4", "gpt-5.4-mini"] }],
  users: [{ name: "alice", balance_usd: 25 }],
  keys: [
    // No names: ids must still be distinct (the keys share their visible prefix).
    { key: QUOTA_KEY, user: "alice", group: "oa", quota_usd: 10, expires_at: "2099-01-01T00:00:00Z" },
    { key: WALLET_KEY, user: "alice", group: "oa" },
    { key: IDLE_KEY, user: "alice", group: "oa" }
  ],
  accounts: [{
    name: "sim",
    platform: "openai",
    kind: "simulator",
    groups: ["oa"],
    model_mapping: { "gpt-5.4": "gpt-5.4-2026-03-01", "gpt-5.4-mini": "gpt-5.4-mini" }
  }]
}

interface WireTotals {
  readonly requests: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_tokens: number
  readonly cache_creation_tokens: number
  readonly total_tokens: number
  readonly cost: number
}

interface UsageBody {
  readonly mode: string
  readonly status: string
  readonly isValid: boolean
  readonly quota?: { limit: number; used: number; remaining: number; unit: string }
  readonly remaining: number
  readonly unit: string
  readonly balance?: number
  readonly planName?: string
  readonly expires_at?: string
  readonly usage: { today: WireTotals; total: WireTotals }
  readonly model_stats?: ReadonlyArray<{ model: string; requests: number; input_tokens: number; output_tokens: number; total_tokens: number; cost: number }>
}

interface ClientUsage {
  readonly input_tokens: number
  readonly output_tokens: number
}

describe("GET /v1/usage", () => {
  let gw: TestGateway
  /** What the client was told it used, summed over the requests the quota key made. */
  const seen = { requests: 0, input: 0, output: 0 }
  const seenMini = { requests: 0 }

  beforeAll(async () => {
    gw = await startGateway({ config })
    const count = (u: ClientUsage) => {
      seen.requests++
      seen.input += u.input_tokens
      seen.output += u.output_tokens
    }
    for (const input of ["first question", "a second, somewhat longer question about usage"]) {
      const res = await postResponses(gw.url, QUOTA_KEY, { model: "gpt-5.4", input })
      expect(res.status).toBe(200)
      count((res.json as { usage: ClientUsage }).usage)
    }
    const streamed = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${QUOTA_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "a streamed question", stream: true })
    })
    const { events } = await readEvents(streamed)
    const completed = events.at(-1) as { type: string; response: { usage: ClientUsage } }
    expect(completed.type).toBe("response.completed")
    count(completed.response.usage)
    const mini = await postResponses(gw.url, QUOTA_KEY, { model: "gpt-5.4-mini", input: "mini" })
    expect(mini.status).toBe(200)
    seenMini.requests++
    // A refused request is not usage.
    expect((await postResponses(gw.url, QUOTA_KEY, { model: "nope", input: "x" })).status).toBe(404)
    expect((await postResponses(gw.url, WALLET_KEY, { model: "gpt-5.4", input: "wallet" })).status).toBe(200)
  })
  afterAll(() => gw.close())

  const usage = async (key: string, query = ""): Promise<UsageBody> => {
    const res = await call(gw.url, `/v1/usage${query}`, { key })
    expect(res.status).toBe(200)
    return res.json as UsageBody
  }

  it("totals reflect the served requests and the tokens the client was told about", async () => {
    const body = await usage(QUOTA_KEY)
    const gpt54 = body.model_stats?.find((m) => m.model === "gpt-5.4")
    expect(gpt54).toMatchObject({ requests: seen.requests, input_tokens: seen.input, output_tokens: seen.output })
    expect(gpt54?.total_tokens).toBe(seen.input + seen.output)
    expect(body.usage.total.requests).toBe(seen.requests + seenMini.requests)
    expect(body.usage.today.requests).toBe(body.usage.total.requests)
    expect(body.usage.total.input_tokens).toBeGreaterThanOrEqual(seen.input)
    expect(body.usage.total.total_tokens).toBe(body.usage.total.input_tokens + body.usage.total.output_tokens)
    expect(body.usage.total.cost).toBeGreaterThan(0)
  })

  it("model_stats lists the requested model names, not the upstream's", async () => {
    const body = await usage(QUOTA_KEY)
    const models = (body.model_stats ?? []).map((m) => m.model).sort()
    expect(models).toEqual(["gpt-5.4", "gpt-5.4-mini"])
    for (const m of body.model_stats ?? []) {
      expect(Object.keys(m).sort()).toEqual(["cost", "input_tokens", "model", "output_tokens", "requests", "total_tokens"])
    }
  })

  it("a key with a quota: quota_limited with limit, used and remaining in USD", async () => {
    const body = await usage(QUOTA_KEY)
    expect(body).toMatchObject({ mode: "quota_limited", status: "active", isValid: true, unit: "USD" })
    expect(body.quota?.limit).toBe(10)
    expect(body.quota?.unit).toBe("USD")
    expect(body.quota?.used).toBeGreaterThan(0)
    expect(body.quota?.used).toBeCloseTo(body.usage.total.cost, 9)
    expect(body.quota?.remaining).toBeCloseTo(10 - (body.quota?.used ?? 0), 9)
    expect(body.remaining).toBe(body.quota?.remaining)
    expect(body.expires_at).toBe("2099-01-01T00:00:00.000Z")
  })

  it("a key without a quota: unrestricted with the user's balance, which served requests reduced", async () => {
    const wallet = await usage(WALLET_KEY)
    expect(wallet).toMatchObject({ mode: "unrestricted", status: "active", isValid: true, unit: "USD" })
    expect(wallet.quota).toBeUndefined()
    expect(typeof wallet.planName).toBe("string")
    // The user's balance is shared by all of alice's keys: 25 USD minus everything they spent.
    const quotaKey = await usage(QUOTA_KEY)
    expect(wallet.balance).toBeCloseTo(25 - wallet.usage.total.cost - quotaKey.usage.total.cost, 9)
    expect(wallet.remaining).toBe(wallet.balance)
    expect(wallet.usage.total.requests).toBe(1)
  })

  it("keys count separately, even when they share a visible prefix", async () => {
    const idle = await usage(IDLE_KEY)
    expect(idle.usage.total.requests).toBe(0)
    // Always an array, empty when there is no usage: clients iterate it without a check.
    expect(idle.model_stats).toEqual([])
  })

  it("start_date/end_date select the model_stats days (inclusive)", async () => {
    const today = new Date().toISOString().slice(0, 10)
    const inRange = await usage(QUOTA_KEY, `?start_date=${today}&end_date=${today}`)
    expect((inRange.model_stats ?? []).length).toBe(2)
    const past = await usage(QUOTA_KEY, "?start_date=2020-01-01&end_date=2020-01-31")
    expect(past.model_stats).toEqual([])
    // The totals do not depend on the range.
    expect(past.usage.total.requests).toBe(inRange.usage.total.requests)
  })

  it("a malformed date is a 400 invalid_date", async () => {
    for (const query of ["?start_date=yesterday", "?start_date=2024-13-01", "?end_date=2024-02-30", "?start_date=2024-1-5"]) {
      const res = await call(gw.url, `/v1/usage${query}`, { key: QUOTA_KEY })
      expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "invalid_date" })
    }
  })

  it("a lone start_date in the future says so", async () => {
    const res = await call(gw.url, "/v1/usage?start_date=2999-01-01", { key: QUOTA_KEY })
    const error = expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "invalid_date", param: "start_date" })
    expect(error.message).toContain("future")
  })

  it("end_date before start_date is a 400", async () => {
    const res = await call(gw.url, "/v1/usage?start_date=2024-05-02&end_date=2024-05-01", { key: QUOTA_KEY })
    expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "invalid_date", param: "start_date" })
  })
})
