/**
 * The WebSocket series are on /metrics from the start, at zero: a dashboard or an alert reads 0 on a
 * gateway no client has connected to yet, not "no data". This file opens no WebSocket, so nothing
 * else in its process has recorded them.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call } from "../http/helpers.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: "sk-series-0001", user: "alice", group: "oa", name: "series" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

describe("/metrics before any WebSocket connection", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  it("shows modelgate_websocket_connections and every turn outcome at zero", async () => {
    const scrape = await call(gw.url, "/metrics")
    expect(scrape.status).toBe(200)
    const lines = scrape.text.split("\n")
    expect(lines).toContain("# TYPE modelgate_websocket_connections gauge")
    expect(lines).toContain("modelgate_websocket_connections 0")
    expect(lines).toContain("# TYPE modelgate_websocket_turns_total counter")
    for (const outcome of ["completed", "failed", "incomplete", "refused", "warm_up"]) {
      expect(lines).toContain(`modelgate_websocket_turns_total{outcome="${outcome}"} 0`)
    }
  })
})
