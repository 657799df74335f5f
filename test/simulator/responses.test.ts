import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { simulateResponses as simulateResponsesAt } from "../../src/services/upstream/simulator/index.js"
import type { SimulateOptions } from "../../src/services/upstream/simulator/shared.js"
import { codexTools, plainPrompts } from "./agentTools.js"
import { checkResponsesStream } from "./grammar.js"

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Weather for a place",
  strict: false,
  parameters: {
    type: "object",
    properties: { location: { type: "string" }, days: { type: "integer" }, unit: { type: "string", enum: ["c", "f"] } },
    required: ["location"]
  }
}

const asObj = (u: unknown): Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) throw new Error(`not an object: ${JSON.stringify(u)}`)
  return u as Record<string, unknown>
}

const outputText = (json: Record<string, unknown>): string => {
  const output = json["output"] as ReadonlyArray<Record<string, unknown>>
  return output
    .flatMap((item) => (item["type"] === "message" ? (item["content"] as ReadonlyArray<Record<string, unknown>>) : []))
    .map((part) => String(part["text"]))
    .join("")
}

/** The simulator at a fixed time, unless told otherwise (its caller passes the Clock's time). */
const simulateResponses = (body: Record<string, unknown>, options: SimulateOptions = {}) =>
  simulateResponsesAt(body, { createdAt: 1_795_000_000, ...options })

describe("simulateResponses", () => {
  it("is deterministic for the same request and created time", () => {
    const body = { model: "gpt-5", input: "Hello there, simulator", stream: true }
    const a = simulateResponses(body, { createdAt: 1_795_640_788 })
    const b = simulateResponses(structuredClone(body), { createdAt: 1_795_640_788 })
    expect(a).toEqual(b)
    expect(JSON.stringify(a)).toBe(JSON.stringify(b))
    // ids are derived from the request by default, so they don't depend on the clock either
    expect(simulateResponses(body, { createdAt: 1 }).json["id"]).toBe(a.json["id"])
  })

  it("gives different ids for different requests, and random ids on request", () => {
    const a = simulateResponses({ model: "m", input: "one" })
    const b = simulateResponses({ model: "m", input: "two" })
    expect(a.json["id"]).not.toBe(b.json["id"])
    const r1 = simulateResponses({ model: "m", input: "one" }, { randomIds: true })
    const r2 = simulateResponses({ model: "m", input: "one" }, { randomIds: true })
    expect(r1.json["id"]).not.toBe(r2.json["id"])
    expect(String(r1.json["id"])).toMatch(/^resp_[0-9a-f]{24}$/)
  })

  it("answers a string input with text following the streaming grammar", () => {
    const { json, events } = simulateResponses({ model: "claude-sonnet-4-5", input: "What is the capital of France? Please answer briefly." })
    const summary = checkResponsesStream(events)
    expect(events.map((e) => e["type"])).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...events.filter((e) => e["type"] === "response.output_text.delta").map(() => "response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed"
    ])
    const deltas = events.filter((e) => e["type"] === "response.output_text.delta")
    expect(deltas.length).toBeGreaterThanOrEqual(3)
    const text = summary.texts.get(0)
    expect(text).toContain('Simulated answer to: "What is the capital of France? Please answer briefly."')
    expect(outputText(json)).toBe(text)
    // completed.output holds every done item, and equals the JSON form
    expect(summary.terminal["output"]).toEqual(summary.doneItems)
    expect(json["output"]).toEqual(summary.doneItems)
    expect(summary.terminal).toEqual(json)
    expect(json["model"]).toBe("claude-sonnet-4-5")
    expect(json["status"]).toBe("completed")
  })

  it("has every required Response field and a full usage", () => {
    const { json, events } = simulateResponses({ model: "m", input: "hi", instructions: "be brief", metadata: { a: "b" } })
    for (const key of ["id", "object", "created_at", "output", "error", "incomplete_details", "instructions", "metadata", "model", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p"]) {
      expect(json).toHaveProperty(key)
    }
    expect(json["object"]).toBe("response")
    expect(json["instructions"]).toBe("be brief")
    expect(json["metadata"]).toEqual({ a: "b" })
    const usage = asObj(json["usage"])
    expect(Number.isInteger(usage["input_tokens"])).toBe(true)
    expect(Number.isInteger(usage["output_tokens"])).toBe(true)
    expect(usage["total_tokens"]).toBe(Number(usage["input_tokens"]) + Number(usage["output_tokens"]))
    expect(asObj(usage["input_tokens_details"])["cached_tokens"]).toBe(0)
    expect(asObj(usage["output_tokens_details"])["reasoning_tokens"]).toBe(0)
    // the lifecycle snapshots carry no usage and no output yet
    expect(asObj(events[0]?.["response"])["usage"]).toBeNull()
    expect(asObj(events[0]?.["response"])["output"]).toEqual([])
    // output tokens: ceil(chars / 4)
    expect(usage["output_tokens"]).toBe(Math.ceil(outputText(json).length / 4))
  })

  it("calls the tool the prompt is about, with arguments from the prompt", () => {
    const { json, events } = simulateResponses({
      model: "gpt-5",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Weather in Paris?" }] }],
      tools: [{ ...weatherTool, name: "other" }, weatherTool]
    })
    const summary = checkResponsesStream(events)
    const item = asObj(summary.doneItems[0])
    expect(item["type"]).toBe("function_call")
    expect(item["name"]).toBe("get_weather")
    expect(String(item["id"])).toMatch(/^fc_/)
    expect(String(item["call_id"])).toMatch(/^call_/)
    // The required argument, from the prompt; the optional ones the prompt says nothing of are left out.
    expect(JSON.parse(String(item["arguments"]))).toEqual({ location: "Paris" })
    const argDeltas = events.filter((e) => e["type"] === "response.function_call_arguments.delta")
    expect(argDeltas.length).toBeGreaterThanOrEqual(2)
    expect(argDeltas.length).toBeLessThanOrEqual(3)
    expect(summary.args.get(0)).toBe(item["arguments"])
    expect(json["output"]).toEqual([item])
    expect(json["tools"]).toEqual([{ ...weatherTool, name: "other" }, weatherTool])
  })

  it("answers a plain prompt in text, whatever tools the agent sends", () => {
    for (const prompt of plainPrompts) {
      const { json, events } = simulateResponses({
        model: "gpt-5.4",
        instructions: "You are Codex.",
        tools: codexTools,
        tool_choice: "auto",
        input: [
          { type: "message", role: "user", content: [{ type: "input_text", text: "<environment_context><cwd>/home/me/project</cwd><shell>bash</shell></environment_context>" }] },
          { type: "message", role: "user", content: [{ type: "input_text", text: prompt }] }
        ]
      })
      checkResponsesStream(events)
      expect((json["output"] as ReadonlyArray<Record<string, unknown>>).map((i) => i["type"]), prompt).toEqual(["message"])
      expect(outputText(json)).toContain(prompt.slice(0, 20))
    }
  })

  it("calls the tool a prompt asks for, with arguments drawn from the prompt", () => {
    const cases: ReadonlyArray<readonly [string, string, unknown]> = [
      ["run ls -la", "shell", { command: ["bash", "-lc", "ls -la"] }],
      ["Please run `npm test -- --run` in the shell.", "shell", { command: ["bash", "-lc", "npm test -- --run"] }],
      ["What does src/main.ts export?", "read_file", { path: "src/main.ts" }],
      ["Use the read_file tool on README.md", "read_file", { path: "README.md" }],
      ["call update_plan with 'write the tests'", "update_plan", { plan: [{ step: "write the tests", status: "write the tests" }] }]
    ]
    for (const [prompt, name, args] of cases) {
      const { json, events } = simulateResponses({ model: "gpt-5.4", tools: codexTools, input: [{ role: "user", content: prompt }] })
      checkResponsesStream(events)
      const item = asObj((json["output"] as ReadonlyArray<unknown>)[0])
      expect(item["type"], prompt).toBe("function_call")
      expect(item["name"], prompt).toBe(name)
      expect(JSON.parse(String(item["arguments"])), prompt).toEqual(args)
    }
  })

  it("reads the prompt past a system or developer message that follows it", () => {
    const { json } = simulateResponses({
      model: "gpt-5.4",
      tools: codexTools,
      input: [{ role: "user", content: "run echo hi" }, { role: "developer", content: "Environment: /srv/app/main.py" }]
    })
    const item = asObj((json["output"] as ReadonlyArray<unknown>)[0])
    expect(item).toMatchObject({ type: "function_call", name: "shell", arguments: JSON.stringify({ command: ["bash", "-lc", "echo hi"] }) })
  })

  it("honours tool_choice: a named function, required, or none", () => {
    const tools = [weatherTool, { ...weatherTool, name: "other" }]
    const named = simulateResponses({ model: "m", input: "x", tools, tool_choice: { type: "function", name: "other" } })
    expect(asObj((named.json["output"] as ReadonlyArray<unknown>)[0])["name"]).toBe("other")
    const required = simulateResponses({ model: "m", input: "x", tools, tool_choice: "required" })
    expect(asObj((required.json["output"] as ReadonlyArray<unknown>)[0])["name"]).toBe("get_weather")
    const auto = simulateResponses({ model: "m", input: "x", tools, tool_choice: "auto" })
    expect(asObj((auto.json["output"] as ReadonlyArray<unknown>)[0])["type"]).toBe("message")
    const none = simulateResponses({ model: "m", input: "Weather in Paris?", tools, tool_choice: "none" })
    expect(asObj((none.json["output"] as ReadonlyArray<unknown>)[0])["type"]).toBe("message")
  })

  it("answers a function_call_output with text that mentions the output", () => {
    const { json, events } = simulateResponses({
      model: "gpt-5",
      tools: [weatherTool],
      input: [
        { role: "user", content: "Weather in Paris?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{\"location\":\"Paris\"}" },
        { type: "function_call_output", call_id: "call_1", output: "18C and sunny" }
      ]
    })
    checkResponsesStream(events)
    expect(outputText(json)).toContain("18C and sunny")
  })

  it("answers with text (not a tool call) when the last item is not a user message", () => {
    const { json } = simulateResponses({
      model: "m",
      tools: [weatherTool],
      input: [{ role: "user", content: "first question" }, { role: "assistant", content: "prefill" }]
    })
    expect(outputText(json)).toContain("first question")
  })

  it("returns JSON text when text.format asks for json_schema", () => {
    const { json } = simulateResponses({
      model: "m",
      input: "give me json",
      text: { format: { type: "json_schema", name: "x", schema: { type: "object", properties: { name: { type: "string" }, age: { type: "number" } } } } }
    })
    expect(JSON.parse(outputText(json))).toEqual({ name: "simulated", age: 1 })
  })

  it("stops with response.incomplete when max_output_tokens is too small", () => {
    const { json, events } = simulateResponses({ model: "m", input: "tell me a long story please", max_output_tokens: 5 })
    const summary = checkResponsesStream(events)
    expect(events.at(-1)?.["type"]).toBe("response.incomplete")
    expect(json["status"]).toBe("incomplete")
    expect(json["incomplete_details"]).toEqual({ reason: "max_output_tokens" })
    expect(outputText(json).length).toBe(20)
    expect(asObj(json["usage"])["output_tokens"]).toBe(5)
    expect(summary.terminal).toEqual(json)
  })

  it("follows the grammar for any user text and tool mix (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.boolean(), fc.boolean(), (text, withTools, asItems) => {
        const body = {
          model: "m",
          input: asItems ? [{ type: "message", role: "user", content: [{ type: "input_text", text }] }] : text,
          ...(withTools ? { tools: [weatherTool] } : {})
        }
        const { json, events } = simulateResponses(body)
        const summary = checkResponsesStream(events)
        expect(summary.terminal["output"]).toEqual(json["output"])
        if (!withTools) expect(summary.texts.get(0)).toBe(outputText(json))
      }),
      { numRuns: 100 }
    )
  })
})
