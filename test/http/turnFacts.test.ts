/**
 * What a turn came to, as the core returns it (src/core/turnFacts.ts) and the access line reports
 * it: a stream that waited for its key's slot still names the account that answered and the tokens
 * settled (its call ran inside the stream, after the door had answered); and the settlement runs
 * once the call's slots are given back, so a slow store holds no slot.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AccessLog } from "../../src/observability/accessLog.js"
import * as QuotaMemory from "../../src/services/quota/memory.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { type LogLine, type SchedulingGateway, startSchedulingGateway, streamRequest } from "../scheduler/gatewayHarness.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv } from "../support/gateway.js"
import { postResponses, readEvents, waitFor } from "./helpers.js"

const KEY = "sk-test-openai-0001"

/** The fake upstream's config with the openai key held to one request at a time. */
const oneAtATime = (upstreamUrl: string) => {
  const config = fakeUpstreamConfig(upstreamUrl)
  return { ...config, keys: config.keys.map((k) => k.key === KEY ? { ...k, concurrency: 1 } : k) }
}

const accessLine = (logs: ReadonlyArray<LogLine>, requestId: string | null) =>
  logs.find((l) => l.message === "request" && l.annotations["request_id"] === requestId)?.annotations

describe("a stream that waited for its key's slot", () => {
  let upstream: FakeUpstream
  let gw: SchedulingGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gw = await startSchedulingGateway({
      config: oneAtATime(upstream.url),
      env: fakeUpstreamEnv,
      services: { accessLog: AccessLog.layerLogger }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("is logged with the account that answered it, its attempt and the tokens settled", async () => {
    // The first stream holds the key's one slot while its events trickle out.
    upstream.setFaults([{ _tag: "SlowEvents", delayMs: 40 }])
    const first = await streamRequest(gw.url, KEY, { model: "gpt-5.4", input: "hold the slot" })
    expect(first.status).toBe(200)
    const second = await streamRequest(gw.url, KEY, { model: "gpt-5.4", input: "wait for it" })
    expect(second.status).toBe(200)
    const [a, b] = await Promise.all([readEvents(first), readEvents(second)])
    expect(b.comments).toBeGreaterThan(0) // it waited inside its stream
    expect(a.events.at(-1)?.["type"]).toBe("response.completed")
    expect(b.events.at(-1)?.["type"]).toBe("response.completed")
    const usage = (b.events.at(-1)?.["response"] as { usage: { input_tokens: number; output_tokens: number } }).usage

    const id = second.headers.get("x-request-id")
    await waitFor(() => accessLine(gw.logs, id) !== undefined)
    expect(accessLine(gw.logs, id)).toMatchObject({
      status: 200,
      door: "responses",
      model: "gpt-5.4",
      account: "fake-openai",
      upstream_status: 200,
      attempts: 1,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens
    })
    expect(accessLine(gw.logs, id)?.["cost_usd"]).toBeGreaterThan(0)
  })
})

describe("the settlement after the answer", () => {
  let upstream: FakeUpstream
  let gw: SchedulingGateway
  let releaseFirstSettlement: () => void = () => {}
  const firstSettlementHeld = new Promise<void>((resolve) => {
    releaseFirstSettlement = resolve
  })
  let settlements = 0

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    // The store takes its time with the first settlement (until the test lets it go).
    const slowQuota = Layer.effect(Quota)(Effect.map(Effect.service(Quota), (inner) => ({
      ...inner,
      settle: (s: Parameters<typeof inner.settle>[0]) =>
        settlements++ === 0 ? Effect.andThen(Effect.promise(() => firstSettlementHeld), inner.settle(s)) : inner.settle(s)
    }))).pipe(Layer.provide(QuotaMemory.layer))
    gw = await startSchedulingGateway({
      config: oneAtATime(upstream.url),
      env: fakeUpstreamEnv,
      services: { accessLog: AccessLog.layerLogger, quota: slowQuota }
    })
  })
  afterAll(async () => {
    releaseFirstSettlement()
    await gw.close()
    await upstream.close()
  })

  it("runs once the key's slot is given back: a slow store does not hold the next request", async () => {
    const first = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "first" })
    expect(first.status).toBe(200)
    await waitFor(() => settlements === 1)
    // The first request's settlement is still held; the key's one slot is free all the same.
    const second = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "second" })
    expect(second.status).toBe(200)
    expect(accessLine(gw.logs, first.headers.get("x-request-id"))).toBeUndefined()

    releaseFirstSettlement()
    const id = first.headers.get("x-request-id")
    await waitFor(() => accessLine(gw.logs, id) !== undefined)
    const usage = (first.json as { usage: { input_tokens: number } }).usage
    expect(accessLine(gw.logs, id)).toMatchObject({ status: 200, attempts: 1, input_tokens: usage.input_tokens })
    expect(accessLine(gw.logs, id)?.["cost_usd"]).toBeGreaterThan(0)
  })
})
