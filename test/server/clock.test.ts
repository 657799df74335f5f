/**
 * Time through Effect's Clock (issue 24, item 7), seen through HTTP with no socket: the gateway
 * in-process (gatewayWebHandler) on a TestClock expires a key when the test clock passes its
 * expiry, and the usage report's "today" rolls over with the test clock's day.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayWebHandler } from "../../src/layers.js"
import { testData } from "../support/gateway.js"

const EXPIRING = "sk-clock-expiring-0001"
const LASTING = "sk-clock-lasting-0001"
const config = {
  groups: [{ name: "g", platform: "openai" }],
  users: [{ name: "u", balance_usd: 5 }],
  keys: [
    { key: EXPIRING, user: "u", group: "g", expires_at: "2030-01-01T00:00:00Z" },
    { key: LASTING, user: "u", group: "g" }
  ],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["g"] }]
}

describe("the gateway on a TestClock, in-process", () => {
  let clock: TestClock.TestClock
  let gateway: ReturnType<typeof gatewayWebHandler>
  beforeAll(async () => {
    clock = await Effect.runPromise(Effect.scoped(TestClock.make()))
    await Effect.runPromise(clock.setTime(Date.parse("2029-12-31T22:00:00Z")))
    gateway = gatewayWebHandler(
      Layer.mergeAll(AppConfig.layer(testData(config), "test"), Settings.layer({}), Layer.succeed(Clock.Clock)(clock))
    )
  })
  afterAll(() => gateway.dispose())

  const get = (path: string, key: string) =>
    gateway.handler(new Request(`http://gateway${path}`, { headers: { authorization: `Bearer ${key}` } }))

  it("admits a key before its expiry and refuses it once the test clock is two hours past it", async () => {
    expect((await get("/v1/models", EXPIRING)).status).toBe(200)
    await Effect.runPromise(clock.adjust("4 hours"))
    const refused = await get("/v1/models", EXPIRING)
    expect(refused.status).toBe(403)
    expect(await refused.json()).toMatchObject({ error: { type: "permission_error", code: "api_key_expired" } })
    // Expired keys still read their own usage.
    expect((await get("/v1/usage", EXPIRING)).status).toBe(200)
  })

  it("rolls the usage report's day over with the test clock", async () => {
    await Effect.runPromise(clock.setTime(Date.parse("2030-03-01T23:30:00Z")))
    const before = await get("/v1/usage?start_date=2030-03-05", LASTING)
    expect(before.status).toBe(400)
    expect(((await before.json()) as { error: { message: string } }).error.message).toContain("today is 2030-03-01")
    await Effect.runPromise(clock.adjust("1 hour"))
    const after = await get("/v1/usage?start_date=2030-03-05", LASTING)
    expect(((await after.json()) as { error: { message: string } }).error.message).toContain("today is 2030-03-02")
  })
})
