/**
 * The Chat door at the edge, as every door is: `x-request-id` and the rate-limit headers on its
 * answers, OpenAI's envelope for what it refuses (a bad key, a malformed body, a wrong method), and
 * the access log's `door` saying `chat`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { call, expectEnvelope, waitFor } from "../http/helpers.js"
import { startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-openai-0001"

describe("the Chat door at the edge", () => {
  const logged: Array<AccessEntry> = []
  const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
  let upstream: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const config = fakeUpstreamConfig(upstream.url)
    gw = await startGateway({
      config: { ...config, groups: config.groups.map((g) => (g.name === "oa" ? { ...g, rpm_limit: 1000 } : g)) },
      env: fakeUpstreamEnv,
      services: { accessLog }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("answers with x-request-id and the rate-limit headers, and logs door=chat", async () => {
    const from = logged.length
    const res = await call(gw.url, "/v1/chat/completions", { key: KEY, body: { model: "gpt-5.4", messages: [{ role: "user", content: "hi" }] } })
    expect(res.status).toBe(200)
    expect(res.headers.get("x-request-id")).toMatch(/\S+/)
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("1000")
    await waitFor(() => logged.length > from)
    expect(logged.at(-1)).toMatchObject({ method: "POST", path: "/v1/chat/completions", status: 200, facts: { door: "chat", model: "gpt-5.4" } })
  })

  it("refuses in OpenAI's envelope: a bad key, a missing model, empty messages, a wrong method, a field it cannot honour", async () => {
    expectEnvelope(await call(gw.url, "/v1/chat/completions", { key: "sk-nope-0000000000", body: { model: "gpt-5.4", messages: [] } }), {
      status: 401, type: "authentication_error", code: "invalid_api_key"
    })
    expectEnvelope(await call(gw.url, "/v1/chat/completions", { key: KEY, body: { messages: [{ role: "user", content: "hi" }] } }), {
      status: 400, type: "invalid_request_error", code: "missing_required_parameter", param: "model"
    })
    expectEnvelope(await call(gw.url, "/chat/completions", { key: KEY, body: { model: "gpt-5.4", messages: [] } }), {
      status: 400, type: "invalid_request_error", code: "empty_array", param: "messages"
    })
    expectEnvelope(await call(gw.url, "/v1/chat/completions", { key: KEY, method: "GET" }), {
      status: 405, type: "invalid_request_error", code: "method_not_allowed"
    })
    const before = upstream.requests.length
    expectEnvelope(await call(gw.url, "/v1/chat/completions", { key: KEY, body: { model: "gpt-5.4", messages: [{ role: "user", content: "hi" }], logprobs: true } }), {
      status: 400, type: "invalid_request_error", code: "unsupported_parameter", param: "logprobs"
    })
    expect(upstream.requests.length).toBe(before)
  })
})
