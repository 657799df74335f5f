import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { frameJson, parseSseFrames } from "./sse.js"

const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a place",
  strict: false,
  parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] }
}

describe("fake upstream: OpenAI Responses over a socket", () => {
  let upstream: FakeUpstream
  let client: OpenAI
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    client = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: "sk-test", maxRetries: 0 })
  })
  afterAll(async () => {
    await upstream.close()
  })

  it("answers responses.create() with JSON the SDK accepts", async () => {
    const response = await client.responses.create({ model: "gpt-5", input: "Say hello to the fake upstream" })
    expect(response.object).toBe("response")
    expect(response.model).toBe("gpt-5")
    expect(response.status).toBe("completed")
    expect(response.output_text).toContain('Simulated answer to: "Say hello to the fake upstream"')
    expect(response.usage?.total_tokens).toBeGreaterThan(0)
    const last = upstream.requests.at(-1)
    expect(last?.method).toBe("POST")
    expect(last?.path).toBe("/v1/responses")
    expect(last?.headers["authorization"]).toBe("Bearer sk-test")
    expect(last?.body).toMatchObject({ model: "gpt-5", input: "Say hello to the fake upstream" })
  })

  it("satisfies responses.stream() + finalResponse() for a text answer", async () => {
    const stream = client.responses.stream({ model: "gpt-5", input: "Stream me something" })
    const deltas: Array<string> = []
    stream.on("response.output_text.delta", (e) => deltas.push(e.delta))
    const final = await stream.finalResponse()
    expect(final.status).toBe("completed")
    expect(final.output_text).toBe(deltas.join(""))
    expect(final.output_text).toContain("Stream me something")
    expect(deltas.length).toBeGreaterThanOrEqual(3)
  })

  it("satisfies responses.stream() + finalResponse() for a function call", async () => {
    const stream = client.responses.stream({
      model: "gpt-5",
      input: [{ role: "user", content: "Weather in Paris?" }],
      tools: [weatherTool]
    })
    const argDeltas: Array<string> = []
    stream.on("response.function_call_arguments.delta", (e) => argDeltas.push(e.delta))
    const final = await stream.finalResponse()
    const item = final.output[0]
    expect(item?.type).toBe("function_call")
    if (item?.type !== "function_call") throw new Error("expected a function call")
    expect(item.name).toBe("get_weather")
    expect(JSON.parse(item.arguments)).toEqual({ location: "Paris" })
    expect(argDeltas.join("")).toBe(item.arguments)
  })

  it("completes a function-call round trip with the SDK", async () => {
    const first = await client.responses.create({ model: "gpt-5", input: "Weather in Paris?", tools: [weatherTool] })
    const call = first.output[0]
    if (call?.type !== "function_call") throw new Error("expected a function call")
    const second = await client.responses.create({
      model: "gpt-5",
      tools: [weatherTool],
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "18C and sunny" }
      ]
    })
    expect(second.output_text).toContain("18C and sunny")
  })

  it("streams raw events with create({stream:true}) and event lines on the wire", async () => {
    const stream = await client.responses.create({ model: "gpt-5", input: "raw", stream: true })
    const seen: Array<number> = []
    for await (const event of stream) seen.push(event.sequence_number)
    expect(seen).toEqual(seen.map((_, i) => i))

    const res = await fetch(`${upstream.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Bearer sk-test", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5", input: "raw", stream: true })
    })
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const frames = parseSseFrames(await res.text())
    expect(frames.length).toBe(seen.length)
    for (const frame of frames) expect(frame.event).toBe(frameJson(frame)["type"])
    expect(frames.some((f) => f.data === "[DONE]")).toBe(false)
  })

  it("answers GET /v1/models with an OpenAI list", async () => {
    const page = await client.models.list()
    expect(page.data.length).toBeGreaterThan(0)
    expect(page.data[0]?.object).toBe("model")
  })

  it("rejects a missing bearer token with an OpenAI error body", async () => {
    const res = await fetch(`${upstream.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5", input: "hi" })
    })
    expect(res.status).toBe(401)
    expect(res.headers.get("content-type")).toContain("application/json")
    const body = (await res.json()) as { error: Record<string, unknown> }
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"])
    const wrongScheme = await fetch(`${upstream.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: "Basic abc", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5", input: "hi" })
    })
    expect(wrongScheme.status).toBe(401)
    await wrongScheme.arrayBuffer()
  })

  it("answers unknown routes with 404", async () => {
    const res = await fetch(`${upstream.url}/v1/nope`, { method: "POST", body: "{}" })
    expect(res.status).toBe(404)
    await res.arrayBuffer()
  })
})
