/**
 * The money identity over a mixed load on the Chat door and an openai_chat group: every answer is
 * paid, exactly once, at what the client was told it used. Two Chat accounts share the group; the
 * preferred one fails its first requests (503), which fail over to the other before anything
 * reaches the client. Afterwards /v1/usage counts every request, the tokens the clients saw and
 * their price, and the balance fell by that cost.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { call, waitFor } from "../http/helpers.js"
import { defaultScript, startChatUpstream, type ChatUpstream } from "../support/chatUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-chat-money-0001"
const MODEL = "qwen3-coder"
const FLAKY_FAILURES = 3

interface Seen {
  readonly input: number
  readonly output: number
}

describe("the Chat door's money identity over a mixed load, with failover", () => {
  let flaky: ChatUpstream
  let steady: ChatUpstream
  let gw: TestGateway
  beforeAll(async () => {
    flaky = await startChatUpstream((body, n) => (n < FLAKY_FAILURES ? { _tag: "Error", status: 503, message: "overloaded" } : defaultScript(body)))
    steady = await startChatUpstream()
    gw = await startGateway({
      config: {
        groups: [{ name: "local", platform: "openai_chat", models: [MODEL] }],
        users: [{ name: "alice", balance_usd: 10, concurrency: 8 }],
        keys: [{ key: KEY, user: "alice", group: "local" }],
        prices: [{ model: MODEL, input: 1, output: 2 }],
        accounts: [
          { name: "flaky", platform: "openai_chat", base_url: `${flaky.url}/v1`, groups: ["local"], priority: 1 },
          { name: "steady", platform: "openai_chat", base_url: `${steady.url}/v1`, groups: ["local"], priority: 2 }
        ]
      }
    })
  })
  afterAll(async () => {
    await gw.close()
    await flaky.close()
    await steady.close()
  })

  it("bills every answer once, at the usage each client saw", async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0 })
    const messages = [{ role: "user" as const, content: "Say hello" }]
    const before = (await call(gw.url, "/v1/usage", { key: KEY })).json as { balance: number }
    const loads: Array<() => Promise<Seen>> = [
      async () => {
        const c = await openai.chat.completions.create({ model: MODEL, messages })
        return { input: c.usage?.prompt_tokens ?? 0, output: c.usage?.completion_tokens ?? 0 }
      },
      async () => {
        const c = await openai.chat.completions.stream({ model: MODEL, messages, stream_options: { include_usage: true } }).finalChatCompletion()
        return { input: c.usage?.prompt_tokens ?? 0, output: c.usage?.completion_tokens ?? 0 }
      },
      async () => {
        const r = await openai.responses.stream({ model: MODEL, input: "Say hello" }).finalResponse()
        return { input: r.usage?.input_tokens ?? 0, output: r.usage?.output_tokens ?? 0 }
      },
      async () => {
        const m = await anthropic.messages.create({ model: MODEL, max_tokens: 64, messages })
        return { input: m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0), output: m.usage.output_tokens }
      }
    ]
    const seen: Array<Seen> = []
    for (let round = 0; round < 3; round++) seen.push(...(await Promise.all(loads.map((load) => load()))))
    expect(flaky.requests.length).toBeGreaterThanOrEqual(FLAKY_FAILURES)
    expect(seen.every((s) => s.input > 0 && s.output > 0)).toBe(true)

    const micros = (usd: number) => Math.round(usd * 1e6)
    const expectedMicros = seen.reduce((sum, s) => sum + s.input * 1 + s.output * 2, 0)
    type Report = { balance: number; usage: { total: { requests: number; input_tokens: number; output_tokens: number; cost: number } } }
    await waitFor(async () => ((await call(gw.url, "/v1/usage", { key: KEY })).json as Report).usage.total.requests === seen.length)
    const report = (await call(gw.url, "/v1/usage", { key: KEY })).json as Report
    expect(report.usage.total).toMatchObject({
      requests: seen.length,
      input_tokens: seen.reduce((sum, s) => sum + s.input, 0),
      output_tokens: seen.reduce((sum, s) => sum + s.output, 0)
    })
    expect(micros(report.usage.total.cost)).toBe(expectedMicros)
    expect(micros(before.balance) - micros(report.balance)).toBe(expectedMicros)
  })
})
