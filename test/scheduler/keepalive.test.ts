/**
 * A stream request that has to wait for a slot answers at once with an SSE response and waits
 * inside it: `: keep-alive` comments while it waits, then its answer, or a `response.created` +
 * `response.failed` pair when the wait fails. Its place and slots are given back however it ends.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { call, expectEnvelope, postResponses, readEvents, waitFor } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { allFree, type GatewayOptions, type SchedulingGateway, startSchedulingGateway, streamRequest } from "./gatewayHarness.js"

const KEY = "sk-keepalive-0001"
let upstream: FakeUpstream
let gw: SchedulingGateway | undefined

const config = (userConcurrency: number, accountConcurrency: number) => ({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100, concurrency: userConcurrency }],
  keys: [{ key: KEY, user: "alice", group: "oa", name: "ka-key" }],
  accounts: [{
    name: "only",
    platform: "openai",
    base_url: `${upstream.url}/v1`,
    api_key_env: "UP_KEY",
    groups: ["oa"],
    concurrency: accountConcurrency
  }]
})

const start = async (options: Partial<GatewayOptions> & { user?: number; account?: number } = {}) => {
  gw = await startSchedulingGateway({
    config: config(options.user ?? 1, options.account ?? 10),
    env: { UP_KEY: "sk-upstream" },
    settings: { slotWaitMillis: 3_000, slotQueueLimit: 2, ...options.settings },
    scheduling: { keepAliveMillis: 100, ...options.scheduling }
  })
  return gw
}

let n = 0
const stream = (g: SchedulingGateway, signal?: AbortSignal) =>
  streamRequest(g.url, KEY, { model: "gpt-5.4", input: `a stream that may have to wait ${++n}` }, signal)

/** Starts a slow stream that holds the only slot; resolves once the upstream is serving it. */
const holdSlot = async (g: SchedulingGateway) => {
  const inFlight = upstream.inFlight()
  const res = await stream(g)
  await waitFor(() => upstream.inFlight() === inFlight + 1)
  // Wrapped: an async function returning a promise would wait for it.
  return { read: readEvents(res) }
}

beforeAll(async () => {
  upstream = await startFakeUpstream()
})
afterEach(async () => {
  upstream.setFault(undefined)
  await gw?.close()
  gw = undefined
})
afterAll(() => upstream.close())

describe("stream requests that wait for a slot", () => {
  it("waiting for the key slot: SSE at once, keep-alives, then the answer", async () => {
    const g = await start()
    upstream.setFault({ _tag: "SlowEvents", delayMs: 60 })
    const { read: first } = await holdSlot(g)
    let firstDone = false
    void first.then(() => (firstDone = true))
    const res = await stream(g)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
    // The answer started while the slot was still taken.
    expect(firstDone).toBe(false)
    const second = await readEvents(res)
    expect(second.error).toBeUndefined()
    expect(second.comments).toBeGreaterThanOrEqual(2)
    expect(second.events.at(-1)?.["type"]).toBe("response.completed")
    expect(checkResponsesStream(second.events)).toEqual([])
    expect((await first).events.at(-1)?.["type"]).toBe("response.completed")
    await waitFor(async () => allFree(await g.stats()))
  })

  it("waiting for an account slot: the same", async () => {
    const g = await start({ user: 10, account: 1 })
    upstream.setFault({ _tag: "SlowEvents", delayMs: 60 })
    const { read: first } = await holdSlot(g)
    const res = await stream(g)
    expect(res.status).toBe(200)
    const second = await readEvents(res)
    expect(second.comments).toBeGreaterThanOrEqual(2)
    expect(second.events.at(-1)?.["type"]).toBe("response.completed")
    expect(checkResponsesStream(second.events)).toEqual([])
    expect((await first).events.at(-1)?.["type"]).toBe("response.completed")
    await waitFor(async () => allFree(await g.stats()))
  })

  it("a wait that runs out: response.created + response.failed (concurrency_limit_exceeded), never a bare cut", async () => {
    const g = await start({ settings: { slotWaitMillis: 300, slotQueueLimit: 2 } })
    upstream.setFault({ _tag: "SlowEvents", delayMs: 100 })
    const { read: first } = await holdSlot(g)
    const requestsBefore = upstream.requests.length
    const res = await stream(g)
    expect(res.status).toBe(200)
    const { events, comments, error } = await readEvents(res)
    expect(error).toBeUndefined()
    expect(comments).toBeGreaterThanOrEqual(1)
    expect(events.map((e) => e["type"])).toEqual(["response.created", "response.failed"])
    expect(events[1]).toMatchObject({
      response: { status: "failed", model: "gpt-5.4", error: { code: "concurrency_limit_exceeded" } }
    })
    expect(checkResponsesStream(events)).toEqual([])
    expect(upstream.requests.length).toBe(requestsBefore)
    expect((await first).events.at(-1)?.["type"]).toBe("response.completed")
    await waitFor(async () => allFree(await g.stats()))
  })

  it("a client that leaves while waiting gives its place back, and never reaches the upstream", async () => {
    const g = await start()
    upstream.setFault({ _tag: "SlowEvents", delayMs: 60 })
    const { read: first } = await holdSlot(g)
    const requestsBefore = upstream.requests.length
    const controller = new AbortController()
    const res = await stream(g, controller.signal)
    await waitFor(async () => (await g.stats()).some((p) => p.pool === "user:alice" && p.waiting === 1))
    // /metrics shows it: the slot held, the request waiting, per key/user and per account.
    const metrics = (await call(g.url, "/metrics")).text
    expect(metrics).toContain('modelgate_slots_in_use{kind="user",name="alice"} 1')
    expect(metrics).toContain('modelgate_slot_queue_length{kind="user",name="alice"} 1')
    expect(metrics).toContain('modelgate_slots_in_use{kind="account",name="only"} 1')
    const reader = res.body?.getReader()
    await reader?.read()
    controller.abort()
    await waitFor(async () => (await g.stats()).every((p) => p.waiting === 0))
    await first
    await waitFor(async () => allFree(await g.stats()))
    expect(upstream.requests.length).toBe(requestsBefore)
  })

  it("a full queue is a plain 429 before any SSE starts", async () => {
    const g = await start({ settings: { slotQueueLimit: 1 } })
    upstream.setFault({ _tag: "SlowEvents", delayMs: 60 })
    const { read: first } = await holdSlot(g)
    const waiting = await stream(g)
    expect(waiting.status).toBe(200)
    const refused = await postResponses(g.url, KEY, { model: "gpt-5.4", input: "no room", stream: true })
    expectEnvelope(refused, { status: 429, type: "rate_limit_error", code: "too_many_pending_requests" })
    await readEvents(waiting)
    await first
  })
})
