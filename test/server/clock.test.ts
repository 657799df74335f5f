/**
 * Time through Effect's Clock (issue 24, item 7), seen through HTTP with no socket: the gateway
 * in-process (gatewayWebHandler) on a TestClock expires a key when the test clock passes its
 * expiry, the usage report's "today" rolls over with the test clock's day, an account cooled down
 * by a 429 comes back when the test clock passes its retry-after, and a per-minute limit drains.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayWebHandler, type ServiceOverrides } from "../../src/layers.js"
import { Upstream, wholeBody } from "../../src/services/upstream/Upstream.js"
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

/** The gateway in-process on a TestClock set to `at`: the clock to move, and the web handler. */
const onTestClock = async (data: ReturnType<typeof testData>, at: string, overrides: ServiceOverrides = {}) => {
  const clock = await Effect.runPromise(Effect.scoped(TestClock.make()))
  await Effect.runPromise(clock.setTime(Date.parse(at)))
  const gateway = gatewayWebHandler(
    Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({}), Layer.succeed(Clock.Clock)(clock)),
    overrides
  )
  return { clock, gateway }
}

describe("the gateway on a TestClock, in-process", () => {
  let clock: TestClock.TestClock
  let gateway: ReturnType<typeof gatewayWebHandler>
  beforeAll(async () => {
    ;({ clock, gateway } = await onTestClock(testData(config), "2029-12-31T22:00:00Z"))
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

/** A Responses answer as an upstream sends it: enough for the gateway to serve and settle it. */
const completed = (id: string) =>
  JSON.stringify({
    id,
    object: "response",
    status: "completed",
    model: "gpt-5.4",
    output: [{ type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: "hi", annotations: [] }] }],
    usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 }
  })

describe("scheduler cooldowns and rate-limit windows on a TestClock, in-process", () => {
  const KEY = "sk-clock-cooldown-0001"
  const LIMITED = "sk-clock-rpm-0001"
  const cooldownConfig = {
    groups: [{ name: "g", platform: "openai" }],
    users: [{ name: "u", balance_usd: 5 }],
    keys: [{ key: KEY, user: "u", group: "g" }, { key: LIMITED, user: "u", group: "g", rpm_limit: 1 }],
    accounts: ["first", "second"].map((name, i) => ({
      name,
      platform: "openai",
      base_url: "http://upstream.invalid/v1",
      api_key_env: "UPSTREAM_KEY",
      priority: i + 1,
      groups: ["g"]
    }))
  }
  /** Which account each upstream call went to; `first` answers its first call 429 "come back in 30 s". */
  const calls: Array<string> = []
  const upstream = Upstream.layerTest((account) =>
    Effect.sync(() => {
      calls.push(account.name)
      const refuse = account.name === "first" && calls.filter((n) => n === "first").length === 1
      const body = refuse
        ? JSON.stringify({ error: { type: "rate_limit_error", message: "slow down", code: "rate_limit_exceeded" } })
        : completed(`resp_${calls.length}`)
      return {
        status: refuse ? 429 : 200,
        headers: refuse ? { "content-type": "application/json", "retry-after": "30" } : { "content-type": "application/json" },
        body: wholeBody(new TextEncoder().encode(body))
      }
    })
  )
  let clock: TestClock.TestClock
  let gateway: ReturnType<typeof gatewayWebHandler>
  beforeAll(async () => {
    ;({ clock, gateway } = await onTestClock(testData(cooldownConfig, { UPSTREAM_KEY: "sk-upstream" }), "2030-01-01T00:00:00Z", { upstream }))
  })
  afterAll(() => gateway.dispose())

  // A different prompt each time: a repeated one is a session, sticky to the account that served it.
  let n = 0
  const post = (key: string) =>
    gateway.handler(
      new Request("http://gateway/v1/responses", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: `question ${++n}` })
      })
    )

  it("keeps a 429'd account out until the test clock passes its retry-after, then schedules it again", async () => {
    expect((await post(KEY)).status).toBe(200) // first: 429, failed over to second
    expect(calls).toEqual(["first", "second"])
    await Effect.runPromise(clock.adjust("20 seconds"))
    expect((await post(KEY)).status).toBe(200) // first still cooling down
    expect(calls).toEqual(["first", "second", "second"])
    await Effect.runPromise(clock.adjust("11 seconds"))
    expect((await post(KEY)).status).toBe(200) // cooldown over: first is preferred again
    expect(calls).toEqual(["first", "second", "second", "first"])
  })

  it("refuses a key over its rpm_limit until the test clock has drained the minute's window", async () => {
    expect((await post(LIMITED)).status).toBe(200)
    const refused = await post(LIMITED)
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ error: { code: "requests_per_minute_exceeded" } })
    await Effect.runPromise(clock.adjust("61 seconds"))
    expect((await post(LIMITED)).status).toBe(200)
  })
})
