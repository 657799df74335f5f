/**
 * The gateway on the platform's NodeHttpServer (the one server since Effect 4; the lean one is
 * gone): JSON, SSE, the envelope on an unknown route, x-request-id, a client that leaves mid-stream
 * logged as a 499; and the same app run in-process, with no socket (layers.ts gatewayWebHandler).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { gatewayLayer, gatewayWebHandler } from "../../src/layers.js"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { expectEnvelope, postResponses, readEvents, waitFor } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, testData } from "../support/gateway.js"

const KEY = "sk-test-openai-0001"

describe("the platform's NodeHttpServer", () => {
  const logged: Array<AccessEntry> = []
  let url = ""
  let runtime: ManagedRuntime.ManagedRuntime<GatewayServer, unknown>
  let upstream: FakeUpstream
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const data = testData(fakeUpstreamConfig(upstream.url), fakeUpstreamEnv)
    const accessLog = Layer.succeed(AccessLog)({ record: (e) => Effect.sync(() => void logged.push(e)) })
    runtime = ManagedRuntime.make(
      gatewayLayer({ accessLog }, { port: 0, host: "127.0.0.1" }).pipe(
        Layer.provide(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({})))
      )
    )
    url = (await runtime.runPromise(Effect.service(GatewayServer))).url
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

describe("the gateway in-process, with no socket (gatewayWebHandler)", () => {
  const logged: Array<AccessEntry> = []
  let upstream: FakeUpstream
  let gateway: ReturnType<typeof gatewayWebHandler>
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const data = testData(fakeUpstreamConfig(upstream.url), fakeUpstreamEnv)
    const accessLog = Layer.succeed(AccessLog)({ record: (e) => Effect.sync(() => void logged.push(e)) })
    gateway = gatewayWebHandler(Layer.mergeAll(AppConfig.layer(data, "test"), Settings.layer({})), { accessLog })
  })
  afterAll(async () => {
    await gateway.dispose()
    await upstream.close()
  })

  const post = (body: unknown, path = "/v1/responses") =>
    gateway.handler(
      new Request(`http://gateway${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
    )

  it("answers JSON, SSE and the envelope as the server does, and logs each request", async () => {
    const json = await post({ model: "gpt-5.4", input: "hi" })
    expect(json.status).toBe(200)
    expect(((await json.json()) as { status: string }).status).toBe("completed")
    const id = json.headers.get("x-request-id")
    expect(id).toMatch(/^[0-9a-f-]{36}$/)

    const sse = await post({ model: "gpt-5.4", input: "hi", stream: true })
    expect(sse.headers.get("content-type")).toBe("text/event-stream")
    const { events } = await readEvents(sse)
    expect(events.at(-1)?.["type"]).toBe("response.completed")

    const missing = await post({ model: "gpt-5.4" }, "/v1/nope")
    expect(missing.status).toBe(404)
    expect(await missing.json()).toMatchObject({ error: { type: "not_found_error", code: "route_not_found" } })

    await waitFor(() => logged.length >= 3)
    expect(logged.find((e) => e.requestId === id)).toMatchObject({ status: 200, code: "ok", path: "/v1/responses" })
  })

  it("refuses a request without a key, in the envelope", async () => {
    const res = await gateway.handler(new Request("http://gateway/v1/models"))
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: { type: "authentication_error", code: "missing_api_key" } })
  })
})
