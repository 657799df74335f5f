/**
 * Failover, cooldowns and upstream timeouts through a real gateway, against fault-injecting fake
 * upstreams: account A (priority 1) on one fake server, account B (priority 2) on another, so A is
 * always asked first while it is usable and each server's request log says who was asked.
 * A fresh gateway per test: cooldowns from one test never leak into the next.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { Effect } from "effect"
import { Scheduler } from "../../src/services/scheduler/Scheduler.js"
import { call, expectEnvelope, postResponses, readEvents, sleep } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { type GatewayOptions, type SchedulingGateway, startSchedulingGateway, streamRequest } from "./gatewayHarness.js"
import { freePort } from "./redisHarness.js"

const KEY = "sk-failover-openai-01"
const KEY_AN = "sk-failover-anthropic-01"

let A: FakeUpstream
let B: FakeUpstream
let gw: SchedulingGateway | undefined

const config = (extraAccounts: ReadonlyArray<Record<string, unknown>> = []) => ({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }, { name: "an", platform: "anthropic" }],
  users: [{ name: "alice", balance_usd: 100, concurrency: 20 }],
  keys: [
    { key: KEY, user: "alice", group: "oa", name: "oa-key" },
    { key: KEY_AN, user: "alice", group: "an", name: "an-key" }
  ],
  accounts: [
    { name: "acct-a", platform: "openai", base_url: `${A.url}/v1`, api_key_env: "UP_KEY", groups: ["oa"], priority: 1 },
    { name: "acct-b", platform: "openai", base_url: `${B.url}/v1`, api_key_env: "UP_KEY", groups: ["oa"], priority: 2 },
    { name: "an-a", platform: "anthropic", base_url: A.url, api_key_env: "UP_KEY", groups: ["an"], priority: 1 },
    { name: "an-b", platform: "anthropic", base_url: B.url, api_key_env: "UP_KEY", groups: ["an"], priority: 2 },
    ...extraAccounts
  ]
})

const start = async (options: Partial<GatewayOptions> = {}) => {
  gw = await startSchedulingGateway({ config: config(), env: { UP_KEY: "sk-upstream" }, ...options })
  return gw
}

// A new conversation each time: a sticky session would (rightly) keep following the account it moved to.
let asked = 0
const ask = (g: SchedulingGateway, body: Record<string, unknown> = {}) =>
  postResponses(g.url, KEY, { model: "gpt-5.4", input: `failover ${++asked}`, ...body })

const counts = () => ({ a: A.requests.length, b: B.requests.length })

const metrics = async (g: SchedulingGateway) => (await call(g.url, "/metrics")).text

const failoverLines = (g: SchedulingGateway) => g.logs.filter((l) => l.message.startsWith("upstream failover"))

beforeAll(async () => {
  A = await startFakeUpstream()
  B = await startFakeUpstream()
})
afterEach(async () => {
  A.setFault(undefined)
  A.setFaults([])
  B.setFault(undefined)
  B.setFaults([])
  await gw?.close()
  gw = undefined
})
afterAll(async () => {
  await A.close()
  await B.close()
})

describe("failover between accounts", () => {
  it("429 with retry-after: B answers, A cools down that long, then serves again; the switch is logged and counted", async () => {
    const g = await start()
    A.setFaults([{ _tag: "Status", status: 429, headers: { "retry-after": "1" } }])
    const before = counts()
    const res = await ask(g)
    expect(res.status).toBe(200)
    expect(counts()).toEqual({ a: before.a + 1, b: before.b + 1 })
    // Cooling down: A is not asked.
    expect((await ask(g)).status).toBe(200)
    expect(counts()).toEqual({ a: before.a + 1, b: before.b + 2 })
    const [line] = failoverLines(g)
    expect(line?.annotations).toMatchObject({
      request_id: res.headers.get("x-request-id"),
      account: "acct-a",
      status: 429,
      reason: "rate_limited"
    })
    const text = await metrics(g)
    expect(text).toMatch(/modelgate_failovers_total\{reason="rate_limited"\} [1-9]/)
    expect(text).toMatch(/modelgate_account_cooldowns_total\{account="acct-a",reason="rate_limit_burst"\} [1-9]/)
    await sleep(1_100)
    expect((await ask(g)).status).toBe(200)
    expect(counts().a).toBe(before.a + 2)
  })

  it("a short burst is not an exhausted window: A is back after the requests window resets", async () => {
    const g = await start()
    A.setFaults([{
      _tag: "Status",
      status: 429,
      headers: {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "20000",
        "x-ratelimit-reset-tokens": "6m0s"
      }
    }])
    expect((await ask(g)).status).toBe(200)
    await sleep(1_100)
    const before = counts()
    expect((await ask(g)).status).toBe(200)
    expect(counts().a).toBe(before.a + 1)
  })

  it("an exhausted window keeps A out for as long as the upstream says", async () => {
    const g = await start()
    A.setFaults([{
      _tag: "Status",
      status: 429,
      headers: {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": String(Math.floor(Date.now() / 1000) + 2 * 3600)
      }
    }])
    expect((await ask(g)).status).toBe(200)
    expect(await metrics(g)).toMatch(/modelgate_account_cooldowns_total\{account="acct-a",reason="rate_limit_window"\} [1-9]/)
    // With B also limited, the 503 tells when the first account is back: B's short burst, not A's hours.
    B.setFaults([{ _tag: "Status", status: 429, headers: { "retry-after": "5" } }])
    const limited = await ask(g)
    expectEnvelope(limited, { status: 429, type: "rate_limit_error", code: "upstream_rate_limited" })
    const none = await ask(g)
    expectEnvelope(none, { status: 503, type: "api_error", code: "no_available_account" })
    expect(Number(none.headers.get("retry-after"))).toBeLessThanOrEqual(5)
  })

  it("5xx fails over but does not cool A down at once", async () => {
    const g = await start()
    A.setFaults([{ _tag: "Status", status: 500 }])
    const before = counts()
    expect((await ask(g)).status).toBe(200)
    expect((await ask(g)).status).toBe(200)
    expect(counts()).toEqual({ a: before.a + 2, b: before.b + 1 })
    expect(failoverLines(g)[0]?.annotations).toMatchObject({ reason: "server_error", status: 500 })
  })

  it("529: failover, and a short cooldown", async () => {
    const g = await start()
    A.setFaults([{ _tag: "Status", status: 529 }])
    const before = counts()
    expect((await ask(g)).status).toBe(200)
    expect((await ask(g)).status).toBe(200)
    expect(counts()).toEqual({ a: before.a + 1, b: before.b + 2 })
    expect(await metrics(g)).toMatch(/modelgate_account_cooldowns_total\{account="acct-a",reason="overloaded"\} [1-9]/)
  })

  it("401: B answers and A only cools down; a 401 on a later request takes A out until an operator acts", async () => {
    const g = await start({ scheduling: { authCooldownSeconds: 0 } })
    A.setFaults([{ _tag: "Status", status: 401 }, { _tag: "Status", status: 401 }])
    const before = counts()
    expect((await ask(g)).status).toBe(200)
    // No cooldown to wait out here: A is asked again, and refuses again.
    expect((await ask(g)).status).toBe(200)
    expect((await ask(g)).status).toBe(200)
    expect(counts()).toEqual({ a: before.a + 2, b: before.b + 3 })
    const group = g.data.groups.get("oa")
    if (!group) throw new Error("no group")
    const listed = await g.run(Effect.flatMap(Scheduler, (s) => s.accounts(group)))
    expect(listed.map((a) => a.name)).toEqual(["acct-b"])
    const aLines = g.logs.filter((l) => l.annotations["account"] === "acct-a")
    expect(aLines.some((l) => l.level === "WARN" && l.message.includes("cooling down"))).toBe(true)
    expect(aLines.some((l) => l.level === "ERROR" && l.message.includes("taken out") &&
      l.annotations["upstream_message"] === "Simulated upstream error 401")).toBe(true)
    await g.run(Effect.flatMap(Scheduler, (s) => s.reinstate("acct-a")))
    expect((await ask(g)).status).toBe(200)
    expect(counts().a).toBe(before.a + 3)
  })

  it("every account failing: the catalogue's error, after at most the configured switches", async () => {
    const g = await start({ scheduling: { maxSwitches: 0 } })
    A.setFault({ _tag: "Status", status: 502 })
    B.setFault({ _tag: "Status", status: 502 })
    const before = counts()
    expectEnvelope(await ask(g), { status: 502, type: "upstream_error", code: "upstream_error" })
    expect(counts()).toEqual({ a: before.a + 1, b: before.b })
    await g.close()
    const g2 = await start()
    expectEnvelope(await ask(g2), { status: 502, type: "upstream_error", code: "upstream_error" })
    expect(counts()).toEqual({ a: before.a + 2, b: before.b + 1 })
  })

  it("the Anthropic path fails over too", async () => {
    const g = await start()
    A.setFaults([{ _tag: "Status", status: 529 }])
    const res = await postResponses(g.url, KEY_AN, { model: "claude-sonnet-4-5", input: "failover" })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ object: "response", status: "completed" })
  })
})

describe("upstream timeouts and transport failures", () => {
  it("a hang before the first byte: first-byte timeout, then B answers", async () => {
    const g = await start({ settings: { upstreamFirstByteTimeoutMillis: 300 } })
    A.setFaults([{ _tag: "HangBeforeHeaders", ms: 5_000 }, { _tag: "HangBeforeHeaders", ms: 5_000 }])
    const started = Date.now()
    expect((await ask(g)).status).toBe(200)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(failoverLines(g)[0]?.annotations).toMatchObject({ reason: "first_byte_timeout", account: "acct-a" })
    // Streams too: nothing had reached the client.
    const res = await streamRequest(g.url, KEY, { model: "gpt-5.4", input: "stream after a hang" })
    const { events } = await readEvents(res)
    expect(events.at(-1)?.["type"]).toBe("response.completed")
    expect(checkResponsesStream(events)).toEqual([])
  })

  it("a connect error fails over", async () => {
    const closed = await freePort()
    const g = await startSchedulingGateway({
      config: config([{
        name: "acct-dead",
        platform: "openai",
        base_url: `http://127.0.0.1:${closed}/v1`,
        api_key_env: "UP_KEY",
        groups: ["oa"],
        priority: 0
      }]),
      env: { UP_KEY: "sk-upstream" }
    })
    gw = g
    expect((await ask(g)).status).toBe(200)
    expect(failoverLines(g)[0]?.annotations).toMatchObject({ reason: "connect_error", account: "acct-dead" })
  })

  it("cut mid-stream: no failover once bytes reached the client; the stream ends with response.failed", async () => {
    const g = await start()
    A.setFaults([{ _tag: "CutAfterEvents", events: 3 }])
    const before = counts()
    const res = await streamRequest(g.url, KEY, { model: "gpt-5.4", input: "cut me" })
    const { events, error } = await readEvents(res)
    expect(error).toBeUndefined()
    expect(events.at(-1)?.["type"]).toBe("response.failed")
    expect(checkResponsesStream(events)).toEqual([])
    expect(counts()).toEqual({ a: before.a + 1, b: before.b })
  })

  it("an upstream silent mid-stream past the idle timeout: response.failed, not a hang", async () => {
    const g = await start({ settings: { upstreamIdleTimeoutMillis: 300 } })
    A.setFaults([{ _tag: "SlowEvents", delayMs: 2_000 }])
    const started = Date.now()
    const res = await streamRequest(g.url, KEY, { model: "gpt-5.4", input: "go quiet" })
    const { events } = await readEvents(res)
    // Without the idle timeout the 2 s gaps would make this stream last most of a minute.
    expect(Date.now() - started).toBeLessThan(5_000)
    const last = events.at(-1) as { type: string; response: { error: { message: string } } }
    expect(last.type).toBe("response.failed")
    expect(last.response.error.message).toMatch(/silent/)
    expect(checkResponsesStream(events)).toEqual([])
  })
})
