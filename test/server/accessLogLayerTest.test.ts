/**
 * AccessLog.layerTest: a test suite reads each request's access entry as a value (no log parsing),
 * with the gateway in-process.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Layer } from "effect"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayWebHandler } from "../../src/layers.js"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { testData } from "../support/gateway.js"

const KEY = "sk-access-entries-0001"

describe("AccessLog.layerTest", () => {
  const entries: Array<AccessEntry> = []
  const gateway = gatewayWebHandler(
    Layer.mergeAll(
      AppConfig.layer(testData({
        groups: [{ name: "g", platform: "openai" }],
        users: [{ name: "u", balance_usd: 5 }],
        keys: [{ key: KEY, user: "u", group: "g", name: "the-key" }],
        accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["g"] }]
      }), "test"),
      Settings.layer({})
    ),
    { accessLog: AccessLog.layerTest(entries) }
  )
  afterAll(() => gateway.dispose())

  it("collects one entry per request, refused or served, with its status, code and key", async () => {
    const models = await gateway.handler(new Request("http://gateway/v1/models", { headers: { authorization: `Bearer ${KEY}` } }))
    const refused = await gateway.handler(new Request("http://gateway/v1/models", { headers: { authorization: "Bearer sk-nope" } }))
    expect([models.status, refused.status]).toEqual([200, 401])
    expect(entries.map((e) => ({ method: e.method, path: e.path, status: e.status, code: e.code }))).toEqual([
      { method: "GET", path: "/v1/models", status: 200, code: "ok" },
      { method: "GET", path: "/v1/models", status: 401, code: "invalid_api_key" }
    ])
    expect(entries[0]?.requestId).toBe(models.headers.get("x-request-id"))
  })
})
