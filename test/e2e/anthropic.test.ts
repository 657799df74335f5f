/**
 * Messages-style groups end to end: the openai SDK talks Responses to the gateway, the gateway talks
 * Anthropic Messages to a local fake upstream (real wire format, `event:` lines, x-api-key), and the
 * SDK's strict stream parser is the judge of what comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-anthropic-0001"
const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

describe("anthropic-backed group through the gateway", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let client: OpenAI

  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ upstream, gw, close } = await startWithFakeUpstream())
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
  })
  afterAll(() => close())

  const lastUpstream = () => upstream.requests[upstream.requests.length - 1]!

  it("responses.create() gets a complete Responses object from a Messages upstream", async () => {
    const res = await client.responses.create({ model: "claude-sonnet-4-6", input: "Say hello", instructions: "Be brief" })
    expect(res.id).toMatch(/^resp_/)
    expect(res.object).toBe("response")
    expect(res.model).toBe("claude-sonnet-4-6")
    expect(res.status).toBe("completed")
    expect(res.output_text).toContain("Say hello")
    const message = res.output.find((o) => o.type === "message")
    expect(message?.type === "message" && message.content[0]?.type === "output_text" && message.content[0].annotations)
      .toEqual([])
    expect(res.usage?.total_tokens).toBe((res.usage?.input_tokens ?? 0) + (res.usage?.output_tokens ?? 0))
    // What the upstream saw: a Messages request with the system prompt and its own auth header.
    const sent = lastUpstream()
    expect(sent.path).toBe("/v1/messages")
    expect(sent.headers["x-api-key"]).toBe("sk-ant-upstream")
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
    expect(sent.body).toMatchObject({
      model: "claude-sonnet-4-6",
      system: [{ type: "text", text: "Be brief" }],
      stream: false
    })
    expect((sent.body as { max_tokens: number }).max_tokens).toBeGreaterThan(0)
  })

  it("responses.stream() + finalResponse() accepts the translated stream", async () => {
    const deltas: Array<string> = []
    const stream = client.responses.stream({ model: "claude-sonnet-4-6", input: "Stream me something" })
    stream.on("response.output_text.delta", (e) => deltas.push(e.delta))
    const final = await stream.finalResponse()
    expect(final.status).toBe("completed")
    expect(final.model).toBe("claude-sonnet-4-6")
    expect(deltas.length).toBeGreaterThan(1)
    expect(final.output_text).toBe(deltas.join(""))
  })

  it("the raw SSE follows the Responses grammar, with event: lines", async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-sonnet-4-6", input: "Grammar please", stream: true, reasoning: { effort: "medium" } })
    })
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const text = await res.text()
    const frames = text.split("\n\n").filter((f) => f.trim() !== "")
    const events = frames.map((f) => {
      const event = /^event: (.+)$/m.exec(f)?.[1]
      const data = JSON.parse(/^data: (.+)$/m.exec(f)![1]!) as Record<string, unknown>
      expect(event).toBe(data["type"])
      return data
    })
    expect(checkResponsesStream(events)).toEqual([])
    // Thinking came back as a reasoning item carrying what rebuilds the block next turn.
    const done = events.at(-1) as { response: { output: Array<{ type: string; encrypted_content?: string }> } }
    const reasoning = done.response.output.find((o) => o.type === "reasoning")
    expect(reasoning?.encrypted_content).toMatch(/^gw1:/)
  })

  it("a two-turn function-calling round trip sends the first turn's output back", async () => {
    const first = await client.responses.create({
      model: "claude-sonnet-4-6",
      input: [{ role: "user", content: "What's the weather in Paris?" }],
      tools: [weatherTool],
      reasoning: { effort: "low" }
    })
    const call = first.output.find((o) => o.type === "function_call")
    expect(call?.type).toBe("function_call")
    if (call?.type !== "function_call") return
    expect(call.name).toBe("get_weather")
    expect(() => JSON.parse(call.arguments) as unknown).not.toThrow()

    const second = await client.responses.create({
      model: "claude-sonnet-4-6",
      input: [
        { role: "user", content: "What's the weather in Paris?" },
        ...first.output.map((o) => o as unknown as OpenAI.Responses.ResponseInputItem),
        { type: "function_call_output", call_id: call.call_id, output: "Sunny, 21C" }
      ],
      tools: [weatherTool],
      reasoning: { effort: "low" }
    })
    expect(second.status).toBe("completed")
    expect(second.output_text).toContain("Sunny")
    // Upstream got the tool_use and its tool_result, correlated, with the thinking block rebuilt first.
    const messages = (lastUpstream().body as { messages: Array<{ role: string; content: unknown }> }).messages
    const assistant = messages.find((m) => m.role === "assistant")!
    const blocks = assistant.content as Array<{ type: string; id?: string; signature?: string }>
    expect(blocks[0]?.type).toBe("thinking")
    expect(blocks[0]?.signature).toBeTruthy()
    const toolUse = blocks.find((b) => b.type === "tool_use")!
    const result = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []) as Array<{ type: string; tool_use_id?: string }>)
      .find((b) => b.type === "tool_result")
    expect(result?.tool_use_id).toBe(toolUse.id)
  })

  it("usage of translated requests is recorded under the requested model", async () => {
    const res = await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${KEY}` } })
    const body = (await res.json()) as { usage: { total: { requests: number } }; model_stats: Array<{ model: string }> }
    expect(body.usage.total.requests).toBeGreaterThanOrEqual(4)
    expect(body.model_stats.map((m) => m.model)).toContain("claude-sonnet-4-6")
  })

  it("an upstream cut mid-stream ends the client stream with response.failed", async () => {
    upstream.setFault({ _tag: "CutAfterEvents", events: 5 })
    try {
      const stream = client.responses.stream({ model: "claude-sonnet-4-6", input: "Cut me off" })
      const types: Array<string> = []
      stream.on("event", (e) => types.push(e.type))
      await stream.done().catch(() => undefined)
      expect(types.at(-1)).toBe("response.failed")
      expect(types).not.toContain("response.completed")
    } finally {
      upstream.setFault(undefined)
    }
  })
})
