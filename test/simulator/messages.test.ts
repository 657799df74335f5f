import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { simulateMessages } from "../../src/services/upstream/simulator/index.js"
import { claudeCodeTools, plainPrompts } from "./agentTools.js"
import { rebuildMessage } from "./grammar.js"

const weatherTool = {
  name: "get_weather",
  description: "Weather for a place",
  input_schema: { type: "object", properties: { location: { type: "string" }, days: { type: "integer" } }, required: ["location"] }
}

const asObj = (u: unknown): Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) throw new Error(`not an object: ${JSON.stringify(u)}`)
  return u as Record<string, unknown>
}
const content = (json: Record<string, unknown>): ReadonlyArray<Record<string, unknown>> =>
  json["content"] as ReadonlyArray<Record<string, unknown>>

/** The JSON blocks without fields that only exist in the non-streaming form. */
const comparable = (blocks: ReadonlyArray<Record<string, unknown>>) =>
  blocks.map(({ citations: _citations, ...rest }) => rest)

describe("simulateMessages", () => {
  it("is deterministic", () => {
    const body = { model: "claude-sonnet-4-5", max_tokens: 1024, messages: [{ role: "user", content: "Hello" }] }
    expect(simulateMessages(body)).toEqual(simulateMessages(structuredClone(body)))
    expect(simulateMessages({ ...body, messages: [{ role: "user", content: "Other" }] }).json["id"]).not.toBe(simulateMessages(body).json["id"])
  })

  it("answers with text in Anthropic's event order, agreeing with the JSON form", () => {
    const { json, events } = simulateMessages({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      system: "You are terse.",
      messages: [{ role: "user", content: [{ type: "text", text: "What is the capital of France?" }] }]
    })
    const rebuilt = rebuildMessage(events)
    expect(events[0]?.["type"]).toBe("message_start")
    expect(events.at(-2)?.["type"]).toBe("message_delta")
    expect(events.at(-1)?.["type"]).toBe("message_stop")
    expect(rebuilt.pings).toBeGreaterThanOrEqual(1)
    expect(rebuilt.stopReason).toBe("end_turn")
    expect(json["stop_reason"]).toBe("end_turn")
    expect(comparable(rebuilt.content)).toEqual(comparable(content(json)))
    expect(String(content(json)[0]?.["text"])).toContain('"What is the capital of France?"')
    expect(events.filter((e) => e["type"] === "content_block_delta").length).toBeGreaterThanOrEqual(3)
    expect(json["model"]).toBe("claude-sonnet-4-5")
    expect(json["type"]).toBe("message")
    expect(json["role"]).toBe("assistant")
    expect(String(json["id"])).toMatch(/^msg_/)
    expect(rebuilt.message["id"]).toBe(json["id"])
    // cumulative usage in message_delta ends equal to the JSON usage
    const usage = asObj(json["usage"])
    expect(rebuilt.usage["output_tokens"]).toBe(usage["output_tokens"])
    expect(rebuilt.usage["input_tokens"]).toBe(usage["input_tokens"])
    expect(usage["cache_read_input_tokens"]).toBe(0)
    expect(usage["cache_creation_input_tokens"]).toBe(0)
    expect(asObj(asObj(events[0]?.["message"])["usage"])["input_tokens"]).toBe(usage["input_tokens"])
  })

  it("uses the tool the prompt is about, with input from the prompt", () => {
    const { json, events } = simulateMessages({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      tools: [{ ...weatherTool, name: "second" }, weatherTool],
      messages: [{ role: "user", content: "Weather in Paris?" }]
    })
    const rebuilt = rebuildMessage(events)
    expect(json["stop_reason"]).toBe("tool_use")
    expect(rebuilt.stopReason).toBe("tool_use")
    const block = asObj(content(json)[0])
    expect(block["type"]).toBe("tool_use")
    expect(block["name"]).toBe("get_weather")
    expect(String(block["id"])).toMatch(/^toolu_[A-Za-z0-9_-]+$/)
    expect(block["input"]).toEqual({ location: "Paris" })
    expect(rebuilt.content).toEqual(content(json))
    const pieces = events.filter((e) => asObj(e["delta"] ?? {})["type"] === "input_json_delta")
    expect(pieces.length).toBeGreaterThanOrEqual(2)
    expect(pieces.length).toBeLessThanOrEqual(3)
    const start = events.find((e) => e["type"] === "content_block_start")
    expect(asObj(start?.["content_block"])).toEqual({ type: "tool_use", id: block["id"], name: "get_weather", input: {} })
  })

  /** A request as Claude Code sends it: its tools, a reminder before the prompt, its environment after it. */
  const claudeCodeRequest = (prompt: string) => ({
    model: "claude-opus-5-5",
    max_tokens: 32000,
    stream: true,
    thinking: { type: "adaptive", display: "omitted" },
    system: [{ type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } }],
    tools: claudeCodeTools,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "<system-reminder>\nAs you answer, the working directory is /home/me/project and CLAUDE.md says run `npm test`.\n</system-reminder>\n" },
          { type: "text", text: prompt, cache_control: { type: "ephemeral" } }
        ]
      },
      { role: "system", content: [{ type: "text", text: "# Environment\n - Primary working directory: /home/me/project\n - Shell: bash" }] }
    ]
  })

  it("answers a plain prompt in text, though Claude Code sends a dozen tools", () => {
    for (const prompt of plainPrompts) {
      const { json, events } = simulateMessages(claudeCodeRequest(prompt))
      const rebuilt = rebuildMessage(events)
      expect(json["stop_reason"], prompt).toBe("end_turn")
      expect(content(json).map((b) => b["type"]), prompt).toEqual(["thinking", "text"])
      expect(String(content(json)[1]?.["text"])).toContain(`"${prompt.slice(0, 20)}`)
      expect(comparable(rebuilt.content)).toEqual(comparable(content(json)))
    }
  })

  it("uses the tool a prompt asks for, with input drawn from the prompt", () => {
    const cases: ReadonlyArray<readonly [string, string, unknown]> = [
      ["run echo hi there", "Bash", { command: "echo hi there" }],
      ["Run `ls -la src` in bash, please.", "Bash", { command: "ls -la src" }],
      ["What does src/main.ts export?", "Read", { file_path: "src/main.ts" }],
      ["Use the Read tool on /etc/hostname", "Read", { file_path: "/etc/hostname" }],
      ["Find all *.test.ts files under test/", "Glob", { pattern: "*.test.ts", path: "test/" }],
      ["grep for 'TODO' in src/", "Grep", { pattern: "TODO", path: "src/" }],
      ["In src/a.ts replace 'foo' with 'bar' using the Edit tool", "Edit", { file_path: "src/a.ts", old_string: "foo", new_string: "bar" }],
      ["Write 'hello' to notes.txt", "Write", { file_path: "notes.txt", content: "hello" }],
      ["Fetch https://example.com/docs and summarise it", "WebFetch", { url: "https://example.com/docs", prompt: "Fetch https://example.com/docs and summarise it" }],
      ["Search the web for effect layers", "WebSearch", { query: "effect layers" }]
    ]
    for (const [prompt, name, input] of cases) {
      const { json, events } = simulateMessages(claudeCodeRequest(prompt))
      rebuildMessage(events)
      expect(json["stop_reason"], prompt).toBe("tool_use")
      expect(content(json)[1], prompt).toMatchObject({ type: "tool_use", name, input })
    }
  })

  it("honours tool_choice none, any and a named tool", () => {
    const base = { model: "m", max_tokens: 500, tools: [weatherTool, { ...weatherTool, name: "second" }], messages: [{ role: "user", content: "x" }] }
    expect(content(simulateMessages(base).json)[0]?.["type"]).toBe("text")
    expect(content(simulateMessages({ ...base, tool_choice: { type: "any" } }).json)[0]?.["name"]).toBe("get_weather")
    expect(content(simulateMessages({ ...base, tool_choice: { type: "tool", name: "second" } }).json)[0]?.["name"]).toBe("second")
    const weather = { ...base, messages: [{ role: "user", content: "Weather in Paris?" }] }
    expect(content(simulateMessages({ ...weather, tool_choice: { type: "none" } }).json)[0]?.["type"]).toBe("text")
  })

  it("answers a tool_result with text mentioning it", () => {
    const { json, events } = simulateMessages({
      model: "m",
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "18C and sunny" }] }] }
      ]
    })
    rebuildMessage(events)
    expect(json["stop_reason"]).toBe("end_turn")
    expect(String(content(json)[0]?.["text"])).toContain("18C and sunny")
  })

  it("starts with a thinking block when thinking is enabled", () => {
    const { json, events } = simulateMessages({
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      thinking: { type: "enabled", budget_tokens: 2048 },
      tools: [weatherTool],
      messages: [{ role: "user", content: "Weather in Paris?" }]
    })
    const rebuilt = rebuildMessage(events)
    const blocks = content(json)
    expect(blocks.map((b) => b["type"])).toEqual(["thinking", "tool_use"])
    expect(String(blocks[0]?.["thinking"]).length).toBeGreaterThan(0)
    expect(String(blocks[0]?.["signature"]).length).toBeGreaterThan(0)
    expect(rebuilt.content).toEqual(blocks)
    // the thinking block: start, thinking_delta pieces, exactly one signature_delta, then stop
    const ofBlock0 = events.filter((e) => e["index"] === 0).map((e) => (e["type"] === "content_block_delta" ? asObj(e["delta"])["type"] : e["type"]))
    expect(ofBlock0[0]).toBe("content_block_start")
    expect(ofBlock0.at(-2)).toBe("signature_delta")
    expect(ofBlock0.at(-1)).toBe("content_block_stop")
    expect(ofBlock0.filter((t) => t === "thinking_delta").length).toBeGreaterThanOrEqual(2)
    const usage = asObj(json["usage"])
    expect(asObj(usage["output_tokens_details"])["thinking_tokens"]).toBe(Math.ceil(String(blocks[0]?.["thinking"]).length / 4))
    expect(Number(usage["output_tokens"])).toBeGreaterThan(Number(asObj(usage["output_tokens_details"])["thinking_tokens"]))
  })

  it("truncates to max_tokens with stop_reason max_tokens", () => {
    const { json, events } = simulateMessages({ model: "m", max_tokens: 4, messages: [{ role: "user", content: "Tell me a long story about dragons" }] })
    const rebuilt = rebuildMessage(events)
    expect(json["stop_reason"]).toBe("max_tokens")
    expect(rebuilt.stopReason).toBe("max_tokens")
    expect(String(content(json)[0]?.["text"]).length).toBe(16)
    expect(asObj(json["usage"])["output_tokens"]).toBe(4)
    expect(comparable(rebuilt.content)).toEqual(comparable(content(json)))
    // a tool call that doesn't fit never leaves half a tool input behind
    const tool = simulateMessages({ model: "m", max_tokens: 2, tools: [weatherTool], messages: [{ role: "user", content: "Weather in Paris?" }] })
    expect(tool.json["stop_reason"]).toBe("max_tokens")
    expect(content(tool.json).every((b) => b["type"] === "text")).toBe(true)
  })

  it("reports the system prompt as a cache read when cache_control is used", () => {
    const system = [{ type: "text", text: "S".repeat(400), cache_control: { type: "ephemeral" } }]
    const { json, events } = simulateMessages({ model: "m", max_tokens: 100, system, messages: [{ role: "user", content: "hi" }] })
    const usage = asObj(json["usage"])
    expect(usage["cache_read_input_tokens"]).toBe(100)
    expect(Number(usage["input_tokens"])).toBeGreaterThan(0)
    expect(rebuildMessage(events).usage["cache_read_input_tokens"]).toBe(100)
  })

  it("streams what the JSON says for any text, tools and thinking mix (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.boolean(), fc.boolean(), fc.integer({ min: 0, max: 200 }), (text, withTools, thinking, maxTokens) => {
        const { json, events } = simulateMessages({
          model: "m",
          max_tokens: maxTokens,
          messages: [{ role: "user", content: text }],
          ...(withTools ? { tools: [weatherTool] } : {}),
          ...(thinking ? { thinking: { type: "enabled", budget_tokens: 1024 } } : {})
        })
        const rebuilt = rebuildMessage(events)
        expect(comparable(rebuilt.content)).toEqual(comparable(content(json)))
        expect(rebuilt.stopReason).toBe(json["stop_reason"])
        expect(Number(asObj(json["usage"])["output_tokens"])).toBeLessThanOrEqual(maxTokens)
      }),
      { numRuns: 150 }
    )
  })
})
