/**
 * The access log's request facts (src/observability/requestFacts.ts, accessLog.ts): one `request`
 * line per request that, past authentication, names the key by its id (its configured name), the
 * group, the model, the upstream account, its status, the attempts, the upstream latency, the tokens
 * the upstream reported and the cost; fields a request never got to are left out; and never the key
 * material, the upstream's key or the prompt text. Both writers: through Effect's logger
 * (`layerLogger`, the default in tests) and straight to stdout (`layerWriter` / `accessLine`), one
 * JSON object per line with the same fields.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { type AccessEntry, AccessLog, accessLine } from "../../src/observability/accessLog.js"
import { formatLine } from "../../src/observability/logger.js"
import type { RequestFacts } from "../../src/observability/requestFacts.js"
import { type LogLine, type SchedulingGateway, startSchedulingGateway, streamRequest } from "../scheduler/gatewayHarness.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway } from "../support/gateway.js"
import { call, postResponses, readEvents, waitFor } from "./helpers.js"

const OA_KEY = "sk-test-openai-0001"
const AN_KEY = "sk-test-anthropic-0001"
/** Text only the client and the upstream ever see. */
const PROMPT = "Confidential prompt: the launch code is PELICAN-4417"

interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
}

const accessLines = (logs: ReadonlyArray<LogLine>) => logs.filter((l) => l.message === "request")

/** The access line of one request (by its x-request-id), once it is written. */
const accessOf = async (logs: ReadonlyArray<LogLine>, requestId: string | null): Promise<Record<string, unknown>> => {
  expect(requestId).toMatch(/\S{8,}/)
  await waitFor(() => accessLines(logs).some((l) => l.annotations["request_id"] === requestId))
  const lines = accessLines(logs).filter((l) => l.annotations["request_id"] === requestId)
  expect(lines).toHaveLength(1)
  expect(lines[0]?.level).toBe("INFO")
  return lines[0]!.annotations
}

/** Nothing secret anywhere in what was logged. */
const expectNoSecrets = (logs: ReadonlyArray<LogLine>) => {
  const text = JSON.stringify(logs)
  expect(text).not.toContain("sk-test-")
  expect(text).not.toContain("sk-upstream")
  expect(text).not.toContain("sk-ant-upstream")
  expect(text).not.toContain("PELICAN")
  expect(text).not.toContain("launch code")
}

const usageTotal = async (url: string, key: string) =>
  ((await call(url, "/v1/usage", { key })).json as { usage: { total: { requests: number; cost: number } } }).usage.total

describe("the access line of a responses request, through a gateway (layerLogger)", () => {
  let upstream: FakeUpstream
  let gw: SchedulingGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gw = await startSchedulingGateway({
      config: fakeUpstreamConfig(upstream.url),
      env: fakeUpstreamEnv,
      services: { accessLog: AccessLog.layerLogger }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("openai, JSON: key name, group, model, account, upstream status, one attempt, the reported tokens and the cost", async () => {
    const res = await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: PROMPT })
    expect(res.status).toBe(200)
    const usage = (res.json as { usage: Usage }).usage
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({
      method: "POST",
      path: "/v1/responses",
      status: 200,
      code: "ok",
      key: "oa-key",
      group: "oa",
      model: "gpt-5.4",
      account: "fake-openai",
      upstream_status: 200,
      attempts: 1,
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens
    })
    expect(usage.input_tokens).toBeGreaterThan(0)
    expect(usage.output_tokens).toBeGreaterThan(0)
    expect(typeof line["upstream_ms"]).toBe("number")
    expect(line["upstream_ms"]).toBeGreaterThanOrEqual(0)
    expect(line["upstream_ms"]).toBeLessThanOrEqual(line["duration_ms"] as number)
    // The cost is the one billed: what /v1/usage reports for the key's only request (gpt-5.4 is priced).
    const cost = line["cost_usd"]
    expect(typeof cost).toBe("number")
    expect(cost).toBeGreaterThan(0)
    await waitFor(async () => (await usageTotal(gw.url, OA_KEY)).requests === 1)
    expect(cost).toBeCloseTo((await usageTotal(gw.url, OA_KEY)).cost, 6)
    expectNoSecrets(gw.logs)
  })

  it("anthropic, streamed: the translated path logs the same facts, with the stream's final usage", async () => {
    const res = await streamRequest(gw.url, AN_KEY, { model: "claude-sonnet-4-6", input: PROMPT })
    expect(res.status).toBe(200)
    const { events, error } = await readEvents(res)
    expect(error).toBeUndefined()
    const done = events.at(-1) as { type: string; response: { usage: Usage } }
    expect(done.type).toBe("response.completed")
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({
      status: 200,
      code: "ok",
      key: "an-key",
      group: "an",
      model: "claude-sonnet-4-6",
      account: "fake-anthropic",
      upstream_status: 200,
      attempts: 1,
      input_tokens: done.response.usage.input_tokens,
      output_tokens: done.response.usage.output_tokens
    })
    expect(line["cost_usd"]).toBeGreaterThan(0)
    expectNoSecrets(gw.logs)
  })

  it("an upstream refusal: its status and the attempt are logged, no tokens or cost", async () => {
    upstream.setFaults([{ _tag: "Status", status: 400 }])
    const res = await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: PROMPT })
    expect(res.status).toBe(400)
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({ status: 400, key: "oa-key", group: "oa", model: "gpt-5.4", account: "fake-openai", upstream_status: 400, attempts: 1 })
    expect(line).not.toHaveProperty("input_tokens")
    expect(line).not.toHaveProperty("output_tokens")
    expect(line).not.toHaveProperty("cost_usd")
    expectNoSecrets(gw.logs)
  })

  it("a request refused before any upstream call has who and what, but no account, attempts or tokens", async () => {
    const res = await postResponses(gw.url, OA_KEY, { model: "no-such-model", input: PROMPT })
    expect(res.status).toBe(404)
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({ status: 404, key: "oa-key", group: "oa", model: "no-such-model" })
    for (const field of ["account", "upstream_status", "attempts", "upstream_ms", "input_tokens", "output_tokens", "cost_usd"]) {
      expect(line).not.toHaveProperty(field)
    }
  })

  it("an unknown key: no key field at all, and the presented key is not logged", async () => {
    const res = await postResponses(gw.url, "sk-test-not-a-key-9999", { model: "gpt-5.4", input: PROMPT })
    expect(res.status).toBe(401)
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({ status: 401 })
    expect(line).not.toHaveProperty("key")
    expect(line).not.toHaveProperty("group")
    expectNoSecrets(gw.logs)
  })
})

describe("the access line after a failover", () => {
  let a: FakeUpstream
  let b: FakeUpstream
  let gw: SchedulingGateway
  beforeAll(async () => {
    a = await startFakeUpstream()
    b = await startFakeUpstream()
    gw = await startSchedulingGateway({
      config: {
        groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
        users: [{ name: "alice", balance_usd: 50 }],
        keys: [{ key: OA_KEY, user: "alice", group: "oa", name: "oa-key" }],
        accounts: [
          { name: "acct-a", platform: "openai", base_url: `${a.url}/v1`, api_key_env: "UP_KEY", groups: ["oa"], priority: 1 },
          { name: "acct-b", platform: "openai", base_url: `${b.url}/v1`, api_key_env: "UP_KEY", groups: ["oa"], priority: 2 }
        ]
      },
      env: { UP_KEY: "sk-upstream" }
    })
  })
  afterAll(async () => {
    await gw.close()
    await a.close()
    await b.close()
  })

  it("two attempts, and the account and status of the one that answered", async () => {
    a.setFaults([{ _tag: "Status", status: 500 }])
    const res = await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: PROMPT })
    expect(res.status).toBe(200)
    expect(a.requests.length).toBe(1)
    expect(b.requests.length).toBe(1)
    const line = await accessOf(gw.logs, res.headers.get("x-request-id"))
    expect(line).toMatchObject({ status: 200, account: "acct-b", upstream_status: 200, attempts: 2 })
    expectNoSecrets(gw.logs)
  })
})

describe("the stdout writer's line (accessLine)", () => {
  it("through a gateway: one valid JSON object per line, with the same facts as the logger's", async () => {
    const upstream = await startFakeUpstream()
    const written: Array<string> = []
    const gw = await startGateway({
      config: fakeUpstreamConfig(upstream.url),
      env: fakeUpstreamEnv,
      services: { accessLog: AccessLog.layerWriter((line) => written.push(line)) }
    })
    try {
      const res = await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: PROMPT })
      expect(res.status).toBe(200)
      const usage = (res.json as { usage: Usage }).usage
      const id = res.headers.get("x-request-id")
      const parsed = () => written.map((l) => JSON.parse(l) as { message: string; logLevel: string; annotations: Record<string, unknown> })
      await waitFor(() => parsed().some((l) => l.annotations["request_id"] === id))
      for (const line of written) expect(line.endsWith("}\n") && line.indexOf("\n") === line.length - 1).toBe(true)
      const entry = parsed().find((l) => l.annotations["request_id"] === id)
      expect(entry).toMatchObject({ message: "request", logLevel: "INFO" })
      expect(entry?.annotations).toMatchObject({
        status: 200,
        code: "ok",
        key: "oa-key",
        group: "oa",
        model: "gpt-5.4",
        account: "fake-openai",
        upstream_status: 200,
        attempts: 1,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens
      })
      expect(entry?.annotations["cost_usd"]).toBeGreaterThan(0)
      expect(typeof entry?.annotations["upstream_ms"]).toBe("number")
      const all = written.join("")
      expect(all).not.toContain("sk-test-")
      expect(all).not.toContain("PELICAN")
    } finally {
      await gw.close()
      await upstream.close()
    }
  })

  /** The line the logger (`layerLogger` + formatLine) writes for `entry`. */
  const viaLogger = (entry: AccessEntry): string => {
    const lines: Array<string> = []
    Effect.runSync(
      AccessLog.use((log) => log.record(entry)).pipe(
        Effect.provide(AccessLog.layerLogger),
        Effect.provide(Logger.layer([Logger.make((o) => lines.push(formatLine(o)))]))
      )
    )
    expect(lines).toHaveLength(1)
    return lines[0]!
  }

  it("writes exactly the logger's line for a request with every fact, and valid JSON for awkward text", () => {
    const facts: RequestFacts = {
      door: "responses",
      // Ids come from configuration: a quote, a backslash, a control character and non-ASCII must
      // still make valid JSON.
      keyId: "key \"one\"\\\u0001é",
      group: "team/α",
      model: "gpt-5.4",
      account: "acct \"a\"",
      upstreamStatus: 200,
      attempts: 2,
      upstreamLatencyMs: 37,
      inputTokens: 1234,
      outputTokens: 56,
      costMicros: 4_321
    }
    const entry: AccessEntry = {
      requestId: "5f0e8e8c-0000-4000-8000-000000000002",
      method: "POST",
      path: "/v1/responses",
      status: 200,
      code: "ok",
      durationMs: 41,
      facts
    }
    const direct = JSON.parse(accessLine(entry, new Date("2026-01-02T03:04:05.000Z"))) as Record<string, unknown>
    const logged = JSON.parse(viaLogger(entry)) as Record<string, unknown>
    expect(direct).toEqual({ ...logged, timestamp: "2026-01-02T03:04:05.000Z" })
    expect(direct["annotations"]).toEqual({
      request_id: entry.requestId,
      method: "POST",
      path: "/v1/responses",
      status: 200,
      code: "ok",
      duration_ms: 41,
      door: "responses",
      key: facts.keyId,
      group: "team/α",
      model: "gpt-5.4",
      account: "acct \"a\"",
      upstream_status: 200,
      attempts: 2,
      upstream_ms: 37,
      input_tokens: 1234,
      output_tokens: 56,
      cost_usd: 0.004321
    })
  })

  it("leaves out what a request never got to (no facts, or facts partly known)", () => {
    const base: AccessEntry = {
      requestId: "5f0e8e8c-0000-4000-8000-000000000003",
      method: "GET",
      path: "/v1/models",
      status: 401,
      code: "invalid_api_key",
      durationMs: 1
    }
    const bare = JSON.parse(accessLine(base, new Date())) as { annotations: Record<string, unknown> }
    expect(Object.keys(bare.annotations)).toEqual(["request_id", "method", "path", "status", "code", "duration_ms"])
    const facts: RequestFacts = { door: "messages", keyId: "k1", group: "g" }
    const partial = JSON.parse(accessLine({ ...base, status: 404, facts }, new Date())) as { annotations: Record<string, unknown> }
    expect(Object.keys(partial.annotations)).toEqual(["request_id", "method", "path", "status", "code", "duration_ms", "door", "key", "group"])
    expect(JSON.parse(viaLogger({ ...base, status: 404, facts }))).toMatchObject({ annotations: partial.annotations })
  })
})
