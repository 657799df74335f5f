import { afterEach, beforeEach, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { frameJson, readSse, waitFor } from "./sse.js"

const openaiHeaders = { authorization: "Bearer sk-test", "content-type": "application/json" }
const anthropicHeaders = { "x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json" }

describe("fake upstream: faults", () => {
  let upstream: FakeUpstream
  let client: OpenAI
  beforeEach(async () => {
    upstream = await startFakeUpstream()
    client = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: "sk-test", maxRetries: 0 })
  })
  afterEach(async () => {
    await upstream.close()
  })

  const postResponses = (body: unknown, signal?: AbortSignal): Promise<Response> =>
    fetch(`${upstream.url}/v1/responses`, {
      method: "POST",
      headers: openaiHeaders,
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal })
    })
  const postMessages = (body: unknown): Promise<Response> =>
    fetch(`${upstream.url}/v1/messages`, { method: "POST", headers: anthropicHeaders, body: JSON.stringify(body) })

  it("Status: 429 with retry-after reaches the SDK as a RateLimitError", async () => {
    upstream.setFault({ _tag: "Status", status: 429, headers: { "retry-after": "7" } })
    const error = await client.responses.create({ model: "m", input: "x" }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    if (!(error instanceof OpenAI.APIError)) throw new Error("expected an APIError")
    expect(error.status).toBe(429)
    expect(error.headers?.get("retry-after")).toBe("7")
    expect(error.code).toBe("rate_limit_exceeded")
    // still faulted until cleared
    const again = await postResponses({ model: "m", input: "x" })
    expect(again.status).toBe(429)
    await again.arrayBuffer()
    upstream.setFault(undefined)
    expect((await postResponses({ model: "m", input: "x" })).status).toBe(200)
  })

  it("Status: Anthropic errors get the Anthropic body; a custom body is sent as given", async () => {
    upstream.setFaults([{ _tag: "Status", status: 529 }, { _tag: "Status", status: 500, body: { custom: true } }])
    const overloaded = await postMessages({ model: "m", max_tokens: 5, messages: [] })
    expect(overloaded.status).toBe(529)
    expect(await overloaded.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } })
    const custom = await postMessages({ model: "m", max_tokens: 5, messages: [] })
    expect(custom.status).toBe(500)
    expect(await custom.json()).toEqual({ custom: true })
  })

  it("setFaults applies one fault per request, in order, then answers normally", async () => {
    upstream.setFaults([{ _tag: "Status", status: 500 }, undefined, { _tag: "Status", status: 401 }])
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) {
      const res = await postResponses({ model: "m", input: `n${i}` })
      statuses.push(res.status)
      await res.arrayBuffer()
    }
    expect(statuses).toEqual([500, 200, 401, 200])
    expect(upstream.requests.map((r) => (r.body as { input: string }).input)).toEqual(["n0", "n1", "n2", "n3"])
  })

  it("CutAfterEvents: sends N events then destroys the socket", async () => {
    upstream.setFault({ _tag: "CutAfterEvents", events: 3 })
    const res = await postResponses({ model: "m", input: "cut me", stream: true })
    expect(res.status).toBe(200)
    const { frames, error } = await readSse(res)
    expect(frames.map((f) => frameJson(f)["type"])).toEqual(["response.created", "response.in_progress", "response.output_item.added"])
    expect(error).toBeDefined()
    await waitFor(() => upstream.openConnections() === 0)
    expect(upstream.aborted()).toBe(0)

    // the strict SDK stream fails rather than producing a final response
    await expect(client.responses.stream({ model: "m", input: "cut me" }).finalResponse()).rejects.toThrow()
  })

  it("CutAfterEvents: a JSON answer is cut mid-body", async () => {
    upstream.setFault({ _tag: "CutAfterEvents", events: 0 })
    const res = await postResponses({ model: "m", input: "json" })
    await expect(res.text()).rejects.toThrow()
  })

  it("HangBeforeHeaders: delays the answer", async () => {
    upstream.setFaults([{ _tag: "HangBeforeHeaders", ms: 300 }])
    const started = Date.now()
    const res = await postResponses({ model: "m", input: "slow start" })
    expect(res.status).toBe(200)
    await res.json()
    expect(Date.now() - started).toBeGreaterThanOrEqual(280)
  })

  it("HangBeforeHeaders: a client timeout counts as an abort and frees the connection", async () => {
    upstream.setFault({ _tag: "HangBeforeHeaders", ms: 10_000 })
    await expect(postResponses({ model: "m", input: "x" }, AbortSignal.timeout(150))).rejects.toThrow()
    await waitFor(() => upstream.aborted() === 1)
    await waitFor(() => upstream.openConnections() === 0)
  })

  it("SlowEvents: spaces the events out", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 40 })
    const times: Array<number> = []
    const res = await postMessages({ model: "m", max_tokens: 100, stream: true, messages: [{ role: "user", content: "hi" }] })
    const { frames, error } = await readSse(res, () => times.push(Date.now()))
    expect(error).toBeUndefined()
    expect(frameJson(frames.at(-1) ?? { event: undefined, data: "{}" })["type"]).toBe("message_stop")
    const span = (times.at(-1) ?? 0) - (times[0] ?? 0)
    expect(span).toBeGreaterThanOrEqual(40 * (frames.length - 1) - 20)
  })

  it("counts a client abort mid-stream and the open connections return to 0", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 200 })
    const controller = new AbortController()
    const res = await postResponses({ model: "m", input: "abort me please", stream: true }, controller.signal)
    expect(upstream.openConnections()).toBe(1)
    const { frames } = await readSse(res, () => controller.abort())
    expect(frames.length).toBe(1)
    await waitFor(() => upstream.aborted() === 1)
    await waitFor(() => upstream.openConnections() === 0)
  })

  it("counts an SDK stream abort the same way", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 200 })
    const stream = client.responses.stream({ model: "m", input: "abort via sdk" })
    stream.on("response.created", () => stream.abort())
    await expect(stream.finalResponse()).rejects.toThrow()
    await waitFor(() => upstream.aborted() === 1)
    await waitFor(() => upstream.openConnections() === 0)
  })

  it("keeps connections alive between requests", async () => {
    for (let i = 0; i < 4; i++) {
      const res = await postResponses({ model: "m", input: `k${i}` })
      expect(res.headers.get("connection")).toBe("keep-alive")
      await res.json()
      // give the client a moment to put the socket back in its pool
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(upstream.openConnections()).toBe(1)
    expect(upstream.requests).toHaveLength(4)
    expect(upstream.inFlight()).toBe(0)
  })
})
