/**
 * The route table (DESIGN.md "Routes"), the envelope on framework failures (404, 405, 426, 500),
 * `x-request-id` on every response, /health and /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Upstream } from "../../src/services/upstream/Upstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope, postResponses, rawAsAnswer, rawRequest } from "./helpers.js"

const KEY = "sk-routes-key-0001"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: KEY, user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

const RESPONSES_PATHS = [
  "/v1/responses",
  "/v1/responses/compact",
  "/responses",
  "/responses/compact",
  "/backend-api/codex/responses",
  "/backend-api/codex/responses/compact"
]

describe("routes", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  it.each(RESPONSES_PATHS)("POST %s answers a Responses request", async (path) => {
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hello" }, path)
    expect(res.status).toBe(200)
    expect(res.headers.get("x-request-id")).toBeTruthy()
    const body = res.json as { object: string; model: string; status: string }
    expect(body).toMatchObject({ object: "response", model: "gpt-5.4", status: "completed" })
  })

  it("GET /v1/models, /antigravity/models and /v1/usage answer 200 JSON", async () => {
    for (const path of ["/v1/models", "/antigravity/models", "/v1/usage"]) {
      const res = await call(gw.url, path, { key: KEY })
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      expect(res.headers.get("x-request-id")).toBeTruthy()
    }
  })

  it("GET /health needs no key", async () => {
    const res = await call(gw.url, "/health")
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "ok" })
    expect(res.headers.get("x-request-id")).toBeTruthy()
  })

  it("an unknown route is a 404 envelope", async () => {
    const res = await call(gw.url, "/v1/completions", { key: KEY, body: { model: "gpt-5.4" } })
    expectEnvelope(res, { status: 404, type: "not_found_error", code: "route_not_found" })
    const get = await call(gw.url, "/nope")
    expectEnvelope(get, { status: 404, type: "not_found_error", code: "route_not_found", message: "No route for GET /nope" })
    // `/v1/models/{id}` takes one segment: a deeper path is no route, not a wrong method.
    expectEnvelope(await call(gw.url, "/v1/models/a/b", { key: KEY }), { status: 404, type: "not_found_error", code: "route_not_found" })
  })

  it("a wrong method on a known path is a 405 envelope", async () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["DELETE", "/v1/models"],
      ["PUT", "/v1/responses"],
      ["POST", "/v1/models"],
      ["DELETE", "/v1/models/gpt-5.4"],
      ["POST", "/v1/usage"],
      ["PATCH", "/backend-api/codex/responses/compact"],
      ["DELETE", "/health"]
    ]
    for (const [method, path] of cases) {
      const res = await call(gw.url, path, { method, key: KEY })
      expectEnvelope(res, { status: 405, type: "invalid_request_error", code: "method_not_allowed" })
    }
  })

  it("GET on a responses path without an upgrade is 405 (POST only)", async () => {
    const res = await call(gw.url, "/v1/responses", { key: KEY })
    expectEnvelope(res, { status: 405, type: "invalid_request_error", code: "method_not_allowed" })
  })

  it.each(["/v1/responses", "/responses", "/backend-api/codex/responses"])(
    "a WebSocket upgrade on %s with a bad key gets the 401 envelope before any upgrade",
    async (path) => {
      const raw = await rawRequest(gw.url, path, {
        method: "GET",
        headers: {
          authorization: "Bearer sk-not-a-key",
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="
        }
      })
      expect(raw.elapsedMs).toBeLessThan(1_000)
      expectEnvelope(rawAsAnswer(raw), { status: 401, type: "authentication_error", code: "invalid_api_key" })
    }
  )

  it("every response carries its own x-request-id", async () => {
    const answers = [
      await call(gw.url, "/health"),
      await call(gw.url, "/health"),
      await call(gw.url, "/v1/models", { key: KEY }),
      await call(gw.url, "/v1/models"),
      await call(gw.url, "/nope"),
      await call(gw.url, "/v1/models", { method: "DELETE" }),
      await postResponses(gw.url, KEY, "{"),
      await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    ]
    const ids = answers.map((a) => a.headers.get("x-request-id"))
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("an incoming x-request-id is not echoed (the gateway makes its own)", async () => {
    const res = await call(gw.url, "/health", { headers: { "x-request-id": "client-chosen" } })
    expect(res.headers.get("x-request-id")).not.toBe("client-chosen")
  })
})

describe("/metrics", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  /** `modelgate_requests_total` samples as {labels -> value}. */
  const requestCounts = async (): Promise<Map<string, number>> => {
    const res = await call(gw.url, "/metrics")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/)
    expect(res.text).toContain("# TYPE modelgate_requests_total counter")
    const out = new Map<string, number>()
    for (const line of res.text.split("\n")) {
      const m = /^modelgate_requests_total\{([^}]*)\} (\d+(?:\.\d+)?)$/.exec(line)
      if (!m) continue
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
      out.set(`${labels["route"]}|${labels["status"]}|${labels["code"]}`, Number(m[2]))
    }
    return out
  }

  it("counts requests by route, status and code in Prometheus text", async () => {
    const before = await requestCounts()
    await call(gw.url, "/v1/models", { key: KEY })
    await call(gw.url, "/v1/models", { key: KEY })
    await call(gw.url, "/v1/models", { key: "sk-unknown" })
    await call(gw.url, "/nowhere")
    await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    await postResponses(gw.url, KEY, { input: "hi" })
    await call(gw.url, "/v1/models", { method: "DELETE", key: KEY })
    const after = await requestCounts()
    const delta = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0)
    expect(delta("models|200|ok")).toBe(2)
    expect(delta("models|401|invalid_api_key")).toBe(1)
    expect(delta("unknown|404|route_not_found")).toBe(1)
    expect(delta("responses|200|ok")).toBe(1)
    expect(delta("responses|400|missing_model")).toBe(1)
    expect(delta("models|405|method_not_allowed")).toBe(1)
  })

  it("exposes upstream latency histograms in seconds after a served request", async () => {
    await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    const res = await call(gw.url, "/metrics")
    expect(res.text).toMatch(/^# TYPE modelgate_upstream_latency_seconds histogram$/m)
    expect(res.text).toMatch(/^modelgate_upstream_latency_seconds_bucket\{le="0\.005"\} \d+$/m)
    expect(res.text).toMatch(/^modelgate_upstream_latency_seconds_bucket\{le="\+Inf"\} [1-9]\d*$/m)
    expect(res.text).toMatch(/^# TYPE modelgate_upstream_first_byte_seconds histogram$/m)
    expect(res.text).toMatch(/^modelgate_upstream_first_byte_seconds_count [1-9]\d*$/m)
    // The millisecond names stay for this release (deprecated), counting the same calls.
    const count = (name: string) => Number(new RegExp(`^${name}_count (\\d+)$`, "m").exec(res.text)?.[1])
    expect(count("modelgate_upstream_latency_ms")).toBe(count("modelgate_upstream_latency_seconds"))
    expect(count("modelgate_upstream_first_byte_ms")).toBe(count("modelgate_upstream_first_byte_seconds"))
  })

  it("exposes the process's CPU, memory, heap, event-loop delay and open files under prom-client's names", async () => {
    const res = await call(gw.url, "/metrics")
    const value = (name: string, type: "counter" | "gauge") => {
      expect(res.text).toMatch(new RegExp(`^# TYPE ${name} ${type}$`, "m"))
      return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(res.text)?.[1])
    }
    expect(value("process_cpu_seconds_total", "counter")).toBeGreaterThan(0)
    expect(value("process_cpu_user_seconds_total", "counter")).toBeGreaterThan(0)
    expect(value("process_resident_memory_bytes", "gauge")).toBeGreaterThan(0)
    expect(value("nodejs_heap_size_used_bytes", "gauge")).toBeGreaterThan(0)
    expect(value("nodejs_heap_size_total_bytes", "gauge")).toBeGreaterThanOrEqual(value("nodejs_heap_size_used_bytes", "gauge"))
    expect(value("process_start_time_seconds", "gauge")).toBeGreaterThan(1_600_000_000)
    for (const lag of ["nodejs_eventloop_lag_seconds", "nodejs_eventloop_lag_p50_seconds", "nodejs_eventloop_lag_p99_seconds"]) {
      expect(value(lag, "gauge")).toBeGreaterThanOrEqual(0)
    }
    if (process.platform === "linux") expect(value("process_open_fds", "gauge")).toBeGreaterThan(0)
    // Still one exposition: every sample line reads `name{labels} value`, each family declared once.
    const lines = res.text.split("\n").filter((l) => l !== "")
    for (const line of lines) expect(line).toMatch(/^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? \S+)$/)
    const types = lines.filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2])
    expect(new Set(types).size).toBe(types.length)
  })
})

describe("500: an unexpected failure", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      config,
      services: { upstream: Upstream.layerTest(() => Effect.die(new Error("boom: secret internal detail at /srv/x.ts:12"))) }
    })
  })
  afterAll(() => gw.close())

  it("is an internal_error envelope that quotes the request id and leaks nothing", async () => {
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    const error = expectEnvelope(res, { status: 500, type: "api_error", code: "internal_error" })
    expect(error.message).toContain(res.headers.get("x-request-id"))
    expect(res.text).not.toContain("secret")
    expect(res.text).not.toContain("boom")
    expect(res.text).not.toContain(".ts")
  })

  it("does not take the server down", async () => {
    const res = await call(gw.url, "/health")
    expect(res.status).toBe(200)
  })
})
