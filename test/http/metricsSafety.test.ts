/**
 * /metrics is safe to expose (issue 16, item 9): with METRICS_TOKEN it answers only that bearer
 * token; a key without a configured name never shows a prefix of its hash in a label.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Redacted } from "effect"
import { sha256Hex } from "../../src/config/resolve.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope, postResponses } from "./helpers.js"

const KEY = "sk-metrics-unnamed-0001"
const TOKEN = "scrape-token-0123456789"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  // No name, a limit of its own: its slot pool is per key.
  keys: [{ key: KEY, user: "alice", group: "oa", concurrency: 2 }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

describe("/metrics with METRICS_TOKEN", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, settings: { metricsToken: Redacted.make(TOKEN) } })
  })
  afterAll(() => gw.close())

  it("answers only its bearer token", async () => {
    expectEnvelope(await call(gw.url, "/metrics"), { status: 401, type: "authentication_error", code: "invalid_api_key" })
    expectEnvelope(await call(gw.url, "/metrics", { headers: { authorization: "Bearer wrong-token-000000000" } }), {
      status: 401,
      type: "authentication_error",
      code: "invalid_api_key"
    })
    const scrape = await call(gw.url, "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(scrape.status).toBe(200)
    expect(scrape.text).toContain("# TYPE modelgate_requests_total counter")
  })

  it("labels a key without a name by a random alias, never by its hash", async () => {
    expect((await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })).status).toBe(200)
    const scrape = await call(gw.url, "/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })
    const keyLines = scrape.text.split("\n").filter((l) => l.includes(`kind="key"`))
    expect(keyLines.length).toBeGreaterThan(0)
    expect(scrape.text).not.toContain(sha256Hex(KEY).slice(0, 16))
    for (const line of keyLines) expect(line).toMatch(/name="key-[0-9a-f]{12}"/)
  })
})

describe("the model label of modelgate_tokens_total", () => {
  it("is the model when configured somewhere, else 'other': invented names add no series", async () => {
    const gw = await startGateway({
      config: {
        groups: [{ name: "open", platform: "openai" }],
        users: [{ name: "bob", balance_usd: 100 }],
        keys: [{ key: "sk-metrics-open-0001", user: "bob", group: "open", name: "open-key" }],
        // No mapping: this account serves any model name a client invents.
        accounts: [{ name: "sim-any", platform: "openai", kind: "simulator", groups: ["open"] }]
      }
    })
    try {
      for (const model of ["gpt-5.4", "invented-model-1", "invented-model-2"]) {
        expect((await postResponses(gw.url, "sk-metrics-open-0001", { model, input: "hi" })).status).toBe(200)
      }
      const scrape = await call(gw.url, "/metrics")
      expect(scrape.text).toMatch(/^modelgate_tokens_total\{model="gpt-5\.4"\} \d+/m)
      expect(scrape.text).toMatch(/^modelgate_tokens_total\{model="other"\} \d+/m)
      expect(scrape.text).not.toContain("invented-model")
    } finally {
      await gw.close()
    }
  })
})
