/**
 * The two HttpServer implementations GatewayServer chooses between (the lean one by default, the
 * platform's NodeHttpServer with `server: "platform"`) serve the gateway alike: JSON, SSE, the envelope
 * on an unknown route, x-request-id, and a client that leaves mid-stream logged as a 499.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayLayer } from "../../src/layers.js"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { expectEnvelope, postResponses, readEvents, waitFor } from "../core/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, testData } from "../support/gateway.js"

const KEY = "sk-test-openai-0001"

describe.each([
  ["the lean server (default)", "lean" as const],
  ["the platform's NodeHttpServer", "platform" as const]
])("%s", (_name, server) => {
  const logged: Array<AccessEntry> = []
  let url = ""
  let runtime: ManagedRuntime.ManagedRuntime<GatewayServer, unknown>
  let upstream: FakeUpstream
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const data = testData(fakeUpstreamConfig(upstream.url), fakeUpstreamEnv)
    const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
    runtime = ManagedRuntime.make(
      gatewayLayer({ accessLog }, { port: 0, host: "127.0.0.1", server }).pipe(
        Layer.provide(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({})))
      )
    )
    url = (await runtime.runPromise(GatewayServer)).url
  })
  afterAll(async () => {
    await runtime.dispose()
    await upstream.close()
  })

  it("answers JSON and SSE, with x-request-id", async () => {
    const json = await postResponses(url, KEY, { model: "gpt-5.4", input: "hi" })
    expect(json.status).toBe(200)
    expect((json.json as { status: string }).status).toBe("completed")
    expect(json.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
    const res = await fetch(`${url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "hi", stream: true })
    })
    expect(res.headers.get("content-type")).toBe("text/event-stream")
    const { events } = await readEvents(res)
    expect(events.at(-1)?.["type"]).toBe("response.completed")
  })

  it("answers an unknown route with the envelope", async () => {
    const res = await postResponses(url, KEY, { model: "gpt-5.4" }, "/v1/nope")
    expectEnvelope(res, { status: 404, type: "not_found_error", code: "route_not_found" })
  })

  it("logs a client that left mid-stream as a 499, and closes the upstream request", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 30 })
    const controller = new AbortController()
    const res = await fetch(`${url}/v1/responses`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "a long answer please ".repeat(200), stream: true })
    })
    const id = res.headers.get("x-request-id")
    await res.body?.getReader().read()
    controller.abort()
    await waitFor(() => logged.some((e) => e.requestId === id))
    expect(logged.find((e) => e.requestId === id)).toMatchObject({ status: 499, code: "client_closed_request" })
    await waitFor(() => upstream.inFlight() === 0)
    upstream.setFault(undefined)
  })
})
