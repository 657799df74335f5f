/**
 * The OpenAI passthrough path over real sockets: the `openai` SDK -> gateway -> a local fake OpenAI
 * server speaking the real event grammar. The SDK is the oracle for what clients accept; the raw
 * stream is also checked against the grammar; upstream faults are injected per request.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, startWithFakeUpstream, type TestGateway } from "../support/gateway.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { call, eventModel, expectEnvelope, postResponses, readEvents, type SseEvent, waitFor } from "./helpers.js"

const KEY = "sk-test-openai-0001"
const UPSTREAM_MODEL = "gpt-5.4-2026-03-01"

const streamRequest = (gw: TestGateway, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
    ...(signal === undefined ? {} : { signal })
  })

interface Totals {
  readonly requests: number
  readonly output_tokens: number
}

const totals = async (gw: TestGateway): Promise<Totals> => {
  const res = await call(gw.url, "/v1/usage", { key: KEY })
  return (res.json as { usage: { total: Totals } }).usage.total
}

const lastUpstreamRequest = (upstream: FakeUpstream) => {
  const last = upstream.requests.at(-1)
  if (last === undefined) throw new Error("the fake upstream saw no request")
  return last
}

describe("passthrough over a socket with the openai SDK", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let client: OpenAI
  let close: () => Promise<void>
  beforeAll(async () => {
    // A stream cut before its usage is billed by counting tokens; the tokenizer loads on first use
    // (about 0.25 s): loaded here, so settlements land as soon as in a gateway that has run a while.
    await import("gpt-tokenizer/encoding/o200k_base")
    ;({ upstream, gw, close } = await startWithFakeUpstream())
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
  })
  afterAll(() => close())

  it("models.list() returns the group's models it can call (no image model without image generation)", async () => {
    const page = await client.models.list()
    expect(page.data.map((m) => m.id)).toEqual(["gpt-5.4", "gpt-5.4-mini"])
    for (const m of page.data) expect(m).toMatchObject({ object: "model", owned_by: "openai" })
  })

  it("responses.create(): the client sees the requested model; the upstream got the mapped one and the account's key", async () => {
    const before = upstream.requests.length
    const response = await client.responses.create({ model: "gpt-5.4", input: "Say hello through the gateway" })
    expect(response.model).toBe("gpt-5.4")
    expect(response.status).toBe("completed")
    expect(response.output_text).toContain("Say hello through the gateway")
    expect(upstream.requests.length).toBe(before + 1)
    const seen = lastUpstreamRequest(upstream)
    expect(seen.path).toBe("/v1/responses")
    expect(seen.body).toMatchObject({ model: UPSTREAM_MODEL, input: "Say hello through the gateway" })
    expect(seen.headers["authorization"]).toBe("Bearer sk-upstream-openai")
    // The client's own key never reaches the upstream.
    expect(JSON.stringify(seen.headers)).not.toContain(KEY)
  })

  it("an unmapped-name model is forwarded as sent, naming its prompt cache by the session when the client did not", async () => {
    const raw = "{\"model\":\"gpt-5.4-mini\",   \"input\":\"bytes\",\"metadata\":{\"k\":\"v\"}}"
    const res = await postResponses(gw.url, KEY, raw)
    expect(res.status).toBe(200)
    const { prompt_cache_key: cacheKey, ...rest } = lastUpstreamRequest(upstream).body as Record<string, unknown>
    expect(rest).toEqual(JSON.parse(raw))
    expect(cacheKey).toMatch(/^mg-[\w-]{22}$/)
    expect(String(cacheKey)).not.toContain(KEY)
    // The same conversation again: the same cache name; the client's own name goes namespaced by its
    // tenant (test/http/tenantCacheKey.test.ts), the rest as it came.
    await postResponses(gw.url, KEY, raw)
    expect((lastUpstreamRequest(upstream).body as Record<string, unknown>)["prompt_cache_key"]).toBe(cacheKey)
    const named = "{\"model\":\"gpt-5.4-mini\",\"input\":\"bytes\",\"prompt_cache_key\":\"mine\"}"
    await postResponses(gw.url, KEY, named)
    expect(lastUpstreamRequest(upstream).body).toEqual({ ...JSON.parse(named), prompt_cache_key: expect.stringMatching(/^mgu-[\w-]{22}$/) })
  })

  it("responses.stream() + finalResponse() succeed, and every lifecycle event names the requested model", async () => {
    const stream = client.responses.stream({ model: "gpt-5.4", input: "Stream through the gateway" })
    const events: Array<{ type: string; response?: { model: string } }> = []
    const deltas: Array<string> = []
    stream.on("event", (e) => events.push(e as (typeof events)[number]))
    stream.on("response.output_text.delta", (e) => deltas.push(e.delta))
    const final = await stream.finalResponse()
    expect(final.status).toBe("completed")
    expect(final.model).toBe("gpt-5.4")
    expect(final.output_text).toBe(deltas.join(""))
    expect(final.output_text).toContain("Stream through the gateway")
    expect(deltas.length).toBeGreaterThanOrEqual(2)
    const lifecycle = events.filter((e) => e.response !== undefined)
    expect(lifecycle.map((e) => e.type)).toEqual(["response.created", "response.in_progress", "response.completed"])
    for (const e of lifecycle) expect(e.response?.model).toBe("gpt-5.4")
    expect(lastUpstreamRequest(upstream).body).toMatchObject({ model: UPSTREAM_MODEL, stream: true })
  })

  it("responses.stream() with a function call", async () => {
    const stream = client.responses.stream({
      model: "gpt-5.4",
      input: [{ role: "user", content: "Weather in Paris?" }],
      tools: [{
        type: "function",
        name: "get_weather",
        strict: false,
        parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] }
      }]
    })
    const final = await stream.finalResponse()
    const item = final.output[0]
    expect(item?.type).toBe("function_call")
    if (item?.type !== "function_call") throw new Error("expected a function call")
    expect(item.name).toBe("get_weather")
    expect(JSON.parse(item.arguments)).toHaveProperty("location")
  })

  it("the raw SSE passes the grammar check, with no [DONE] and the requested model", async () => {
    const res = await streamRequest(gw, { model: "gpt-5.4", input: "raw stream" })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(res.headers.get("x-request-id")).toBeTruthy()
    const { events, error } = await readEvents(res)
    expect(error).toBeUndefined()
    expect(checkResponsesStream(events)).toEqual([])
    expect(events.at(-1)?.["type"]).toBe("response.completed")
    for (const e of events) {
      const model = eventModel(e)
      if (model !== undefined) expect(model).toBe("gpt-5.4")
    }
  })

  it("streams event by event: the first event reaches the client while the upstream is still sending", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 80 })
    try {
      const started = Date.now()
      const res = await streamRequest(gw, { model: "gpt-5.4", input: "one event at a time, please" })
      let firstAfter = -1
      let upstreamBusyAtFirst = false
      const { events } = await readEvents(res, (_e, i) => {
        if (i === 0) {
          firstAfter = Date.now() - started
          upstreamBusyAtFirst = upstream.inFlight() === 1
        }
      })
      const totalMs = Date.now() - started
      expect(events.length).toBeGreaterThanOrEqual(8)
      expect(upstreamBusyAtFirst).toBe(true)
      expect(firstAfter).toBeLessThan(totalMs - 300)
      expect(checkResponsesStream(events)).toEqual([])
    } finally {
      upstream.setFault(undefined)
    }
  })

  it("a subpath is kept for the upstream URL", async () => {
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "compact me" }, "/v1/responses/compact")
    expect(res.status).toBe(200)
    expect(lastUpstreamRequest(upstream).path).toBe("/v1/responses/compact")
    const codex = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "codex" }, "/backend-api/codex/responses")
    expect(codex.status).toBe(200)
    expect(lastUpstreamRequest(upstream).path).toBe("/v1/responses")
    const bare = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "bare" }, "/responses/compact")
    expect(bare.status).toBe(200)
    expect(lastUpstreamRequest(upstream).path).toBe("/v1/responses/compact")
  })

  it("an upstream cut after the first bytes ends the client stream with response.failed", async () => {
    upstream.setFaults([{ _tag: "CutAfterEvents", events: 5 }])
    const res = await streamRequest(gw, { model: "gpt-5.4", input: "this stream will be cut short by the upstream" })
    expect(res.status).toBe(200)
    const { events, error } = await readEvents(res)
    expect(error).toBeUndefined()
    expect(events.length).toBe(6)
    const last = events.at(-1) as { type: string; sequence_number: number; response: Record<string, unknown> }
    expect(last.type).toBe("response.failed")
    expect(last.sequence_number).toBe(5)
    expect(last.response).toMatchObject({ status: "failed", model: "gpt-5.4", id: (events[0]?.["response"] as { id: string }).id })
    expect(last.response["error"]).toMatchObject({ code: "server_error" })
    expect(checkResponsesStream(events)).toEqual([])
  })

  it("the SDK sees a cut stream as a failed response, not a silent end", async () => {
    upstream.setFaults([{ _tag: "CutAfterEvents", events: 4 }])
    const stream = client.responses.stream({ model: "gpt-5.4", input: "cut again" })
    const types: Array<string> = []
    stream.on("event", (e) => types.push(e.type))
    const final = await stream.finalResponse().catch((e: unknown) => e)
    expect(types.at(-1)).toBe("response.failed")
    if (!(final instanceof Error)) expect((final as { status: string }).status).toBe("failed")
  })

  it("a cut after an item finished still lists that item in response.failed", async () => {
    // Long enough for several deltas; cut after the message item is done but before completed.
    const input = "one two three four five six seven eight nine ten eleven twelve"
    const probe = await streamRequest(gw, { model: "gpt-5.4", input })
    const full = (await readEvents(probe)).events
    const doneAt = full.findIndex((e) => e["type"] === "response.output_item.done")
    expect(doneAt).toBeGreaterThan(0)
    upstream.setFaults([{ _tag: "CutAfterEvents", events: doneAt + 1 }])
    const res = await streamRequest(gw, { model: "gpt-5.4", input })
    const { events } = await readEvents(res)
    expect(events.at(-1)?.["type"]).toBe("response.failed")
    expect(checkResponsesStream(events)).toEqual([])
  })

  it("a client that disconnects mid-stream closes the upstream request", async () => {
    upstream.setFaults([{ _tag: "SlowEvents", delayMs: 150 }])
    const abortedBefore = upstream.aborted()
    const usageBefore = await totals(gw)
    const controller = new AbortController()
    const res = await streamRequest(
      gw,
      { model: "gpt-5.4", input: "slow stream that the client leaves after the first words" },
      controller.signal
    )
    const { events } = await readEvents(res, (e) => (e["type"] === "response.output_text.delta" ? "stop" : undefined))
    expect(events.at(-1)?.["type"]).toBe("response.output_text.delta")
    controller.abort()
    await waitFor(() => upstream.aborted() === abortedBefore + 1)
    await waitFor(() => upstream.inFlight() === 0)
    // What was produced before the client left is still billed, once.
    await waitFor(async () => (await totals(gw)).requests > usageBefore.requests)
    const usageAfter = await totals(gw)
    expect(usageAfter.requests).toBe(usageBefore.requests + 1)
    expect(usageAfter.output_tokens).toBeGreaterThan(usageBefore.output_tokens)
  })

  it("a client that leaves before the upstream answers aborts the upstream request at once", async () => {
    // The upstream would sit on the request for 3 s; the client gives up after 150 ms.
    upstream.setFaults([{ _tag: "HangBeforeHeaders", ms: 3_000 }])
    const abortedBefore = upstream.aborted()
    const controller = new AbortController()
    const left = fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "a question the client stops waiting for" }),
      signal: controller.signal
    }).catch(() => "aborted")
    await waitFor(() => upstream.inFlight() === 1)
    const leftAt = Date.now()
    controller.abort()
    expect(await left).toBe("aborted")
    await waitFor(() => upstream.aborted() === abortedBefore + 1 && upstream.inFlight() === 0, 2_000)
    // Well before the upstream would have answered: the gateway did not hold on to it.
    expect(Date.now() - leftAt).toBeLessThan(1_500)
    // And the gateway serves the next request normally.
    upstream.setFaults([])
    const next = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    expect(next.status).toBe(200)
  })

  it("before any byte, an upstream 400 comes back as a 400 with the upstream's message", async () => {
    upstream.setFaults([{
      _tag: "Status",
      status: 400,
      body: { error: { message: "Invalid value for 'reasoning.effort': 'extreme'", type: "invalid_request_error", param: "reasoning.effort", code: "invalid_value" } }
    }])
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi", reasoning: { effort: "extreme" } })
    expectEnvelope(res, {
      status: 400,
      type: "invalid_request_error",
      code: "invalid_value",
      message: "Invalid value for 'reasoning.effort': 'extreme'"
    })
    // The account is not blamed for the client's request: the next one is served.
    expect((await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })).status).toBe(200)
  })

  it("the SDK raises a BadRequestError with the upstream's message", async () => {
    upstream.setFaults([{ _tag: "Status", status: 400 }])
    const error = await client.responses.create({ model: "gpt-5.4", input: "hi" }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("Simulated upstream error 400")
  })

  it("/v1/usage counts what the passthrough served, under the requested model", async () => {
    const res = await call(gw.url, "/v1/usage", { key: KEY })
    expect(res.status).toBe(200)
    const usage = res.json as { usage: { total: { requests: number } }; model_stats: Array<{ model: string }> }
    expect(usage.usage.total.requests).toBeGreaterThan(5)
    const models = usage.model_stats.map((m) => m.model)
    expect(models).toContain("gpt-5.4")
    expect(models).not.toContain(UPSTREAM_MODEL)
  })
})

/** Two accounts for one group (both on the same fake upstream): failover has somewhere to go. */
const twoAccountConfig = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  const [openai] = base.accounts
  return { ...base, accounts: [...base.accounts, { ...openai, name: "fake-openai-2" }] }
}

describe("passthrough failover and upstream errors", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let single: TestGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gw = await startGateway({ config: twoAccountConfig(upstream.url), env: fakeUpstreamEnv })
    single = await startGateway({ config: fakeUpstreamConfig(upstream.url), env: fakeUpstreamEnv })
  })
  afterAll(async () => {
    await gw.close()
    await single.close()
    await upstream.close()
  })

  it("an upstream 500 before any byte fails over to the second account", async () => {
    const before = upstream.requests.length
    upstream.setFaults([{ _tag: "Status", status: 500 }])
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "failover please" })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ model: "gpt-5.4", status: "completed" })
    expect(upstream.requests.length).toBe(before + 2)
  })

  it("a stream fails over too when the first account answers 503", async () => {
    upstream.setFaults([{ _tag: "Status", status: 503 }])
    const res = await streamRequest(gw, { model: "gpt-5.4", input: "failover stream" })
    expect(res.status).toBe(200)
    const { events } = await readEvents(res)
    expect(checkResponsesStream(events)).toEqual([])
    expect(events.at(-1)?.["type"]).toBe("response.completed")
  })

  it("every account failing: 502 upstream_error", async () => {
    upstream.setFaults([{ _tag: "Status", status: 500 }, { _tag: "Status", status: 502 }])
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "all down" })
    expectEnvelope(res, { status: 502, type: "upstream_error", code: "upstream_error" })
    expect(res.text).not.toContain(upstream.url)
  })

  it("an upstream 429 with retry-after and no other account: 429 rate_limit_error with retry-after", async () => {
    upstream.setFaults([{ _tag: "Status", status: 429, headers: { "retry-after": "7" } }])
    const res = await postResponses(single.url, KEY, { model: "gpt-5.4", input: "rate limited" })
    expectEnvelope(res, { status: 429, type: "rate_limit_error", code: "upstream_rate_limited" })
    expect(res.headers.get("retry-after")).toBe("7")
  })

  it("while the only account cools down: 503 no_available_account with retry-after, upstream not called", async () => {
    const before = upstream.requests.length
    const res = await postResponses(single.url, KEY, { model: "gpt-5.4", input: "hi" })
    expectEnvelope(res, { status: 503, type: "api_error", code: "no_available_account" })
    const retryAfter = Number(res.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(7)
    expect(upstream.requests.length).toBe(before)
  })

  it("the SDK surfaces an upstream 429 (on every account) as a RateLimitError", async () => {
    upstream.setFault({ _tag: "Status", status: 429, headers: { "retry-after": "1" } })
    try {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
      const error = await client.responses.create({ model: "gpt-5.4", input: "hi" }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    } finally {
      upstream.setFault(undefined)
    }
  })
})

describe("passthrough: events seen by the upstream and the client line up", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ upstream, gw, close } = await startWithFakeUpstream())
  })
  afterAll(() => close())

  it("non-lifecycle events reach the client unchanged and in order", async () => {
    const input = "compare what the upstream sent with what the client got"
    const direct = await fetch(`${upstream.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Bearer x", "content-type": "application/json" },
      body: JSON.stringify({ model: UPSTREAM_MODEL, input, stream: true })
    })
    const fromUpstream = (await readEvents(direct)).events
    const viaGateway = (await readEvents(await streamRequest(gw, { model: "gpt-5.4", input }))).events
    // The two answers are simulated a moment apart: timestamps may fall in different seconds.
    const strip = (e: SseEvent) => {
      if (eventModel(e) === undefined) return e
      const response = { ...(e["response"] as Record<string, unknown>) }
      delete response["model"]
      // The gateway names the upstream's prompt cache (the simulator echoes it); the direct call does not.
      delete response["prompt_cache_key"]
      delete response["created_at"]
      delete response["completed_at"]
      return { ...e, response }
    }
    expect(viaGateway.map(strip)).toEqual(fromUpstream.map(strip))
    expect(fromUpstream.some((e) => eventModel(e) === UPSTREAM_MODEL)).toBe(true)
    expect(viaGateway.every((e) => eventModel(e) === undefined || eventModel(e) === "gpt-5.4")).toBe(true)
  })
})
