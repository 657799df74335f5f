/**
 * Key concurrency (DESIGN.md pipeline step 11): a bounded wait queue with a timeout, 429s with the
 * catalogue's codes, and slots given back on every path. The Scheduler is the in-process one with a
 * queue of 1 and a short wait (SchedulerInProcess.layerTest); the upstream is a test layer that answers after
 * a delay the test controls.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { Scheduler } from "../../src/services/scheduler/Scheduler.js"
import { Upstream } from "../../src/services/upstream/Upstream.js"
import { startGateway, type TestGateway, testData } from "../support/gateway.js"
import { expectEnvelope, postResponses, readEvents, sleep, waitFor } from "./helpers.js"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"

const KEY = "sk-concurrency-0001"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100, concurrency: 1 }],
  keys: [{ key: KEY, user: "alice", group: "oa", name: "only-key" }],
  accounts: [{ name: "acct", platform: "openai", kind: "simulator", groups: ["oa"], concurrency: 10 }]
}

const encoder = new TextEncoder()

/** Upstream calls made so far, and how long the next ones take to answer. */
let upstreamCalls = 0
let upstreamDelayMs = 0

const completed = (model: string) =>
  responseObject({
    id: "resp_test",
    createdAt: 1_700_000_000,
    status: "completed",
    completedAt: 1_700_000_001,
    model,
    usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } }
  })

const slowUpstream = Upstream.layerTest((_account, request) =>
  Effect.gen(function*() {
    upstreamCalls++
    yield* Effect.sleep(upstreamDelayMs)
    const model = (JSON.parse(request.body) as { model: string }).model
    const event = { type: "response.created", sequence_number: 0, response: { ...completed(model), status: "in_progress" } }
    const done = { type: "response.completed", sequence_number: 1, response: completed(model) }
    return request.stream
      ? {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: Stream.make(
          encoder.encode(`event: response.created\ndata: ${JSON.stringify(event)}\n\n`),
          encoder.encode(`event: response.completed\ndata: ${JSON.stringify(done)}\n\n`)
        )
      }
      : { status: 200, headers: { "content-type": "application/json" }, body: Stream.make(encoder.encode(JSON.stringify(completed(model)))) }
  })
)

/** The test Scheduler, wrapped to count requests that asked for a key slot (so the test knows one is queued). */
let slotRequests = 0
const scheduler = Layer.effect(
  Scheduler,
  Scheduler.use((inner) => Effect.succeed({
    ...inner,
    acquireKeySlot: (p: Parameters<typeof inner.acquireKeySlot>[0]) =>
      Effect.andThen(Effect.sync(() => slotRequests++), inner.acquireKeySlot(p))
  }))
).pipe(Layer.provide(SchedulerInProcess.layerTest(testData(config), { slotWaitMillis: 300, slotQueueLimit: 1 })))

describe("key concurrency", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, services: { upstream: slowUpstream, scheduler } })
  })
  afterAll(() => gw.close())

  const post = () => postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })

  it("one in flight, one queued until it times out, one refused at once; then slots are free again", async () => {
    upstreamDelayMs = 1_200
    const calls0 = upstreamCalls
    const slots0 = slotRequests
    const first = post()
    await waitFor(() => upstreamCalls === calls0 + 1)
    const secondStarted = Date.now()
    const second = post()
    await waitFor(() => slotRequests === slots0 + 2)
    await sleep(20)

    const third = await post()
    expectEnvelope(third, {
      status: 429,
      type: "rate_limit_error",
      code: "too_many_pending_requests",
      message: "Too many pending requests for this user's keys together, please retry later"
    })

    const waited = await second
    const timedOut = expectEnvelope(waited, { status: 429, type: "rate_limit_error", code: "concurrency_limit_exceeded" })
    // The refusal names the limit that was hit: here the user's, shared by their keys.
    expect(timedOut.message).toContain("this user's keys together")
    expect(Date.now() - secondStarted).toBeGreaterThanOrEqual(280)
    expect(Number(waited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)

    const firstAnswer = await first
    expect(firstAnswer.status).toBe(200)
    expect(upstreamCalls).toBe(calls0 + 1)

    upstreamDelayMs = 0
    const after = await post()
    expect(after.status).toBe(200)
  })

  it("a queued request gets the slot when the one in flight finishes within the wait", async () => {
    upstreamDelayMs = 50
    const slots0 = slotRequests
    const first = post()
    await waitFor(() => slotRequests === slots0 + 1)
    const second = post()
    const [a, b] = await Promise.all([first, second])
    expect([a.status, b.status]).toEqual([200, 200])
    upstreamDelayMs = 0
  })

  it("a stream holds its slot until the stream ends, then releases it", async () => {
    upstreamDelayMs = 0
    const streamed = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "hi", stream: true })
    })
    expect(streamed.status).toBe(200)
    const { events } = await readEvents(streamed)
    expect(events.map((e) => e["type"])).toEqual(["response.created", "response.completed"])
    const next = await post()
    expect(next.status).toBe(200)
  })

  it("a client that gives up while queued does not strand a slot", async () => {
    upstreamDelayMs = 400
    const slots0 = slotRequests
    const calls0 = upstreamCalls
    const first = post()
    await waitFor(() => slotRequests === slots0 + 1)
    const controller = new AbortController()
    const abandoned = fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "hi" })
    }).catch((e: unknown) => e)
    await waitFor(() => slotRequests === slots0 + 2)
    controller.abort()
    await abandoned
    expect((await first).status).toBe(200)
    upstreamDelayMs = 0
    // Both the served and the abandoned request gave their slot back: two in a row succeed.
    expect((await post()).status).toBe(200)
    expect((await post()).status).toBe(200)
    // The abandoned request never reached the upstream.
    expect(upstreamCalls).toBe(calls0 + 3)
  })
})
