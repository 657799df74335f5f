import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { rebuildMessage } from "../simulator/grammar.js"
import { frameJson, parseSseFrames } from "./sse.js"

const headers = { "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01", "content-type": "application/json" }
const weatherTool = { name: "get_weather", input_schema: { type: "object", properties: { location: { type: "string" } } } }

describe("fake upstream: Anthropic Messages over a socket", () => {
  let upstream: FakeUpstream
  beforeAll(async () => {
    upstream = await startFakeUpstream()
  })
  afterAll(async () => {
    await upstream.close()
  })

  const post = (body: unknown, h: Record<string, string> = headers): Promise<Response> =>
    fetch(`${upstream.url}/v1/messages`, { method: "POST", headers: h, body: JSON.stringify(body) })

  it("answers a non-streaming request with a Message", async () => {
    const res = await post({ model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "Hi Claude" }] })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("application/json")
    expect(res.headers.get("request-id")).toMatch(/^req_/)
    const json = (await res.json()) as Record<string, unknown>
    expect(json["type"]).toBe("message")
    expect(json["model"]).toBe("claude-sonnet-4-5")
    expect(json["stop_reason"]).toBe("end_turn")
    expect(JSON.stringify(json["content"])).toContain("Hi Claude")
    expect(upstream.requests.at(-1)?.headers["x-api-key"]).toBe("sk-ant-test")
  })

  it("streams SSE with event: lines that agree with the JSON answer", async () => {
    const body = {
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 1024 },
      tools: [weatherTool],
      messages: [{ role: "user", content: "Weather in Paris?" }]
    }
    const res = await post({ ...body, stream: true })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const frames = parseSseFrames(await res.text())
    expect(frames.length).toBeGreaterThan(5)
    for (const frame of frames) {
      expect(frame.event).toBeDefined()
      expect(frame.event).toBe(frameJson(frame)["type"])
    }
    expect(frames.some((f) => f.event === "ping")).toBe(true)
    const rebuilt = rebuildMessage(frames.map(frameJson))
    expect(rebuilt.stopReason).toBe("tool_use")

    // the non-streaming answer to the same request (stream:false) describes the same content
    const json = (await (await post({ ...body, stream: false })).json()) as Record<string, unknown>
    expect(rebuilt.content).toEqual(json["content"])
  })

  it("requires x-api-key and anthropic-version, answering with Anthropic error bodies", async () => {
    const noKey = await post({ model: "m", max_tokens: 10, messages: [] }, { "anthropic-version": "2023-06-01", "content-type": "application/json" })
    expect(noKey.status).toBe(401)
    const noKeyBody = (await noKey.json()) as { type: string; error: { type: string; message: string } }
    expect(noKeyBody.type).toBe("error")
    expect(noKeyBody.error.type).toBe("authentication_error")
    expect(typeof noKeyBody.error.message).toBe("string")

    const noVersion = await post({ model: "m", max_tokens: 10, messages: [] }, { "x-api-key": "k", "content-type": "application/json" })
    expect(noVersion.status).toBe(400)
    const noVersionBody = (await noVersion.json()) as { type: string; error: { type: string } }
    expect(noVersionBody).toMatchObject({ type: "error", error: { type: "invalid_request_error" } })
  })
})
