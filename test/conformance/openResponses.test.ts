/**
 * The Open Responses compliance scenarios (release 2026-04-24), written as our own tests: basic and
 * streaming responses, a system prompt and a multi-turn input, tools (JSON and streamed), structured
 * output, reasoning, WebSocket chaining, reconnection and a failed turn, on an `openai` group (in
 * front of a spec-complete upstream) and an `anthropic` group (translated), over JSON, SSE and
 * WebSocket. Every body and event is checked against the schema (test/support/openResponses.ts),
 * explicitly here and again by the shared readers.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call, readEvents } from "../http/helpers.js"
import { eventIssues, responseIssues } from "../support/openResponses.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { type Frame, PLATFORMS, responseOf, startWsGateway, WsClient, type WsGateway } from "../websocket/helpers.js"

type Platform = (typeof PLATFORMS)[number]
type Transport = "json" | "sse" | "websocket"
type Rec = Record<string, unknown>

const WEATHER_TOOL = {
  type: "function",
  name: "get_weather",
  description: "Get the current weather for a location",
  parameters: {
    type: "object",
    properties: { location: { type: "string", description: "The city and state, e.g. San Francisco, CA" } },
    required: ["location"]
  }
}

const SCENARIOS: ReadonlyArray<{ readonly name: string; readonly body: Rec; readonly expect: (r: Rec) => void }> = [
  {
    name: "basic response",
    body: { input: [{ type: "message", role: "user", content: "Say hello in exactly 3 words." }] },
    expect: (r) => expect(outputTypes(r)).toContain("message")
  },
  {
    name: "system prompt",
    body: {
      input: [
        { type: "message", role: "system", content: "You are a pirate. Always respond in pirate speak." },
        { type: "message", role: "user", content: "Say hello." }
      ]
    },
    expect: (r) => expect(outputTypes(r)).toContain("message")
  },
  {
    name: "multi-turn",
    body: {
      input: [
        { type: "message", role: "user", content: "My name is Alice." },
        { type: "message", role: "assistant", content: "Hello Alice! How can I help you today?" },
        { type: "message", role: "user", content: "What is my name?" }
      ]
    },
    expect: (r) => expect(outputTypes(r)).toContain("message")
  },
  {
    name: "tool calling",
    body: { input: [{ type: "message", role: "user", content: "What's the weather like in San Francisco?" }], tools: [WEATHER_TOOL] },
    expect: (r) => {
      expect(outputTypes(r)).toContain("function_call")
      // The echoed tool as the spec lists it: strict and description present.
      const tool = (r["tools"] as Array<Rec>)[0]
      expect(tool).toMatchObject({ type: "function", name: "get_weather", description: WEATHER_TOOL.description })
      expect(tool).toHaveProperty("strict")
    }
  },
  {
    name: "structured output",
    body: {
      input: "Give me a person.",
      text: {
        format: {
          type: "json_schema",
          name: "person",
          schema: { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false }
        }
      }
    },
    expect: (r) => {
      const format = (r["text"] as { format: Rec }).format
      expect(format).toMatchObject({ type: "json_schema", name: "person", description: null, strict: false })
      const message = (r["output"] as Array<Rec>).find((i) => i["type"] === "message") as { content: Array<{ text: string }> }
      expect(() => JSON.parse(message.content.map((c) => c.text).join(""))).not.toThrow()
    }
  },
  {
    name: "reasoning",
    body: { input: "Think about 2+2, then answer.", reasoning: { effort: "medium", summary: "auto" }, max_output_tokens: 4_000 },
    expect: (r) => {
      expect(r["reasoning"]).toEqual({ effort: "medium", summary: "auto" })
      expect(outputTypes(r)).toContain("message")
    }
  }
]

const outputTypes = (r: Rec): Array<unknown> => (r["output"] as Array<Rec>).map((i) => i["type"])

/** One turn over a transport: the final response object, and the events when streamed. */
const run = async (gw: WsGateway, p: Platform, transport: Transport, body: Rec): Promise<{ response: Rec; events: Array<Rec> }> => {
  const full = { model: p.model, ...body }
  if (transport === "json") {
    const res = await call(gw.url, "/v1/responses", { key: p.key, body: full })
    expect(res.status, res.text).toBe(200)
    expect(responseIssues(res.json)).toEqual([])
    return { response: res.json as Rec, events: [] }
  }
  let events: Array<Rec>
  if (transport === "sse") {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.key}`, "content-type": "application/json" },
      body: JSON.stringify({ ...full, stream: true })
    })
    expect(res.status).toBe(200)
    events = (await readEvents(res)).events
  } else {
    const ws = await WsClient.withKey(gw, p.key)
    events = await ws.turn(full)
    await ws.close()
  }
  expect(events.flatMap((e, i) => eventIssues(e, transport === "websocket" ? "websocket" : "sse", `#${i}`))).toEqual([])
  expect(checkResponsesStream(events)).toEqual([])
  return { response: responseOf(events.at(-1) as Frame), events }
}

describe.each(PLATFORMS)("Open Responses scenarios on the $platform group", (p) => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway()
  })
  afterAll(() => gw.close())

  describe.each(["json", "sse", "websocket"] as const)("over %s", (transport) => {
    it.each(SCENARIOS)("$name", async (scenario) => {
      const { response, events } = await run(gw, p, transport, scenario.body)
      expect(response["status"]).toBe("completed")
      expect(response["model"]).toBe(p.model)
      scenario.expect(response)
      if (scenario.name === "reasoning" && p.platform === "anthropic") {
        // Thinking comes back as a reasoning item; while it streams it has no payload, so no key.
        expect(outputTypes(response)).toContain("reasoning")
        const added = events.filter((e) => e["type"] === "response.output_item.added" && (e["item"] as Rec)["type"] === "reasoning")
        if (transport !== "json") expect(added.map((e) => Object.hasOwn(e["item"] as Rec, "encrypted_content"))).toEqual([false])
      }
      if (transport !== "json") {
        // The in-progress snapshots carry completed_at: null; the terminal one a time.
        for (const e of events.filter((e) => e["type"] === "response.created" || e["type"] === "response.in_progress")) {
          expect((e["response"] as Rec)["completed_at"]).toBeNull()
        }
        expect(response["completed_at"]).toEqual(expect.any(Number))
      }
    })

    if (transport !== "json") {
      it("streamed tool call: added, arguments delta and done, item done", async () => {
        const { events } = await run(gw, p, transport, SCENARIOS.find((s) => s.name === "tool calling")!.body)
        const types = events.map((e) => e["type"])
        expect(events.some((e) => e["type"] === "response.output_item.added" && (e["item"] as Rec)["type"] === "function_call")).toBe(true)
        expect(types).toContain("response.function_call_arguments.delta")
        expect(types).toContain("response.function_call_arguments.done")
        expect(events.some((e) => e["type"] === "response.output_item.done" && (e["item"] as Rec)["type"] === "function_call")).toBe(true)
      })

      it("a failed turn (the upstream cuts the stream before its first event) is a conforming response.failed", async () => {
        gw.upstream.setFault({ _tag: "CutAfterEvents", events: 0 })
        try {
          const { response, events } = await run(gw, p, transport, { input: "This answer will be cut." })
          expect(events[0]?.["type"]).toBe("response.created")
          expect(events.at(-1)?.["type"]).toBe("response.failed")
          expect(response["status"]).toBe("failed")
          expect(response["error"]).toMatchObject({ code: expect.any(String), message: expect.any(String) })
        } finally {
          gw.upstream.setFault(undefined)
        }
      })

      it("a turn cut in the middle ends in a conforming response.failed", async () => {
        gw.upstream.setFault({ _tag: "CutAfterEvents", events: 4 })
        try {
          const { response, events } = await run(gw, p, transport, { input: "Count from one to twenty, slowly and in words." })
          expect(events.at(-1)?.["type"]).toBe("response.failed")
          expect(response["status"]).toBe("failed")
        } finally {
          gw.upstream.setFault(undefined)
        }
      })
    }
  })

  describe("WebSocket chaining and reconnection", () => {
    it("a chained turn echoes previous_response_id as the client sent it, on every lifecycle event", async () => {
      const ws = await WsClient.withKey(gw, p.key)
      const first = await ws.turn({ model: p.model, input: "My name is Alice." })
      const firstId = responseOf(first.at(-1)).id
      expect(responseOf(first.at(-1))["previous_response_id"]).toBeNull()
      const second = await ws.turn({ model: p.model, previous_response_id: firstId, input: "What is my name?" })
      const lifecycle = second.filter((e) => /^response\.(created|in_progress|completed)$/.test(e.type))
      expect(lifecycle.map((e) => e.type)).toContain("response.completed")
      for (const e of lifecycle) expect(responseOf(e)["previous_response_id"]).toBe(firstId)
      // A third turn chains from the second.
      const secondId = responseOf(second.at(-1)).id
      const third = await ws.turn({ model: p.model, previous_response_id: secondId, input: "And again?" })
      expect(responseOf(third.at(-1))["previous_response_id"]).toBe(secondId)
      await ws.close()
    })

    it("a warm-up's chained answer echoes previous_response_id too", async () => {
      const ws = await WsClient.withKey(gw, p.key)
      const first = await ws.turn({ model: p.model, input: "Hello." })
      const firstId = responseOf(first.at(-1)).id
      const warm = await ws.turn({ model: p.model, previous_response_id: firstId, input: [], generate: false })
      expect(warm.map((e) => e.type)).toEqual(["response.created", "response.completed"])
      for (const e of warm) expect(responseOf(e)["previous_response_id"]).toBe(firstId)
      await ws.close()
    })

    it("after a reconnection, an id of the old connection is a conforming error; the full input then works", async () => {
      const old = await WsClient.withKey(gw, p.key)
      const first = await old.turn({ model: p.model, input: "My name is Alice." })
      const firstId = responseOf(first.at(-1)).id
      await old.close()
      const fresh = await WsClient.withKey(gw, p.key)
      const refused = await fresh.turn({ model: p.model, previous_response_id: firstId, input: "What is my name?" })
      expect(refused).toHaveLength(1)
      expect(eventIssues(refused[0], "websocket")).toEqual([])
      expect(refused[0]).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
      const again = await fresh.turn({
        model: p.model,
        input: [
          { type: "message", role: "user", content: "My name is Alice." },
          ...(first.filter((e) => e.type === "response.output_item.done").map((e) => e["item"]) as Array<Rec>),
          { type: "message", role: "user", content: "What is my name?" }
        ]
      })
      expect(responseOf(again.at(-1))["status"]).toBe("completed")
      await fresh.close()
    })
  })
})
