/** src/endpoints/messages/localCount.ts: count_tokens answered locally for OpenAI-platform groups. */
import { Effect } from "effect"
import fc from "fast-check"
import { countTokens as exactCount } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "vitest"
import { countMessagesTokens, IMAGE_TOKENS } from "../../src/endpoints/messages/localCount.js"

const count = (body: Record<string, unknown>) => Effect.runPromise(countMessagesTokens(body))

const hi = { model: "gpt-5.4", messages: [{ role: "user", content: "hi" }] }

const weatherTool = {
  name: "get_weather",
  description: "The current weather for a city, in degrees Celsius",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

const screenshot = { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }

describe("countMessagesTokens", () => {
  it("a lone user 'hi' is a handful of tokens", async () => {
    const tokens = await count(hi)
    expect(tokens).toBeGreaterThan(0)
    expect(tokens).toBeLessThan(10)
  })

  it("counts the text itself with o200k, not characters / 4", async () => {
    const text = "Refactor the parser so that it streams tokens instead of buffering the whole file. ".repeat(50)
    const withText = await count({ messages: [{ role: "user", content: text }] })
    expect(withText - (await count({ messages: [{ role: "user", content: "" }] }))).toBe(exactCount(text))
  })

  it("grows with every kind of content a request carries", async () => {
    const base = await count(hi)
    const more = async (body: Record<string, unknown>) => expect(await count({ ...hi, ...body })).toBeGreaterThan(base)
    await more({ system: "You are a careful coding assistant." })
    await more({ system: [{ type: "text", text: "You are a careful coding assistant.", cache_control: { type: "ephemeral" } }] })
    await more({
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: [{ type: "thinking", thinking: "The user greets me.", signature: "sig" }] }
      ]
    })
    await more({
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "18 degrees and sunny" }] }
      ]
    })
  })

  it("a tool_result's text counts, whether a string or text blocks", async () => {
    const result = (content: unknown) => ({
      messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content }] }]
    })
    const empty = await count(result(""))
    const long = "line of build output\n".repeat(40)
    expect(await count(result(long))).toBe(empty + exactCount(long))
    expect(await count(result([{ type: "text", text: long }]))).toBe(empty + exactCount(long))
  })

  it("tools count: name, description and the JSON of their schema", async () => {
    const withTool = await count({ ...hi, tools: [weatherTool] })
    expect(withTool - (await count(hi))).toBe(
      exactCount(weatherTool.name) + exactCount(weatherTool.description) + exactCount(JSON.stringify(weatherTool.input_schema))
    )
    expect(await count({ ...hi, tools: [weatherTool, { ...weatherTool, name: "get_forecast" }] })).toBeGreaterThan(withTool)
  })

  it("each image counts the fixed estimate, in a message or in a tool result", async () => {
    const base = await count({ messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }] }] })
    const oneImage = await count({ messages: [{ role: "user", content: [screenshot, { type: "text", text: "what is this?" }] }] })
    expect(oneImage - base).toBe(IMAGE_TOKENS)
    const inResult = await count({
      messages: [{
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "t", content: [screenshot, screenshot] }, { type: "text", text: "what is this?" }]
      }]
    })
    expect(inResult - base).toBe(2 * IMAGE_TOKENS)
  })

  it("fields of unexpected shapes count as nothing rather than failing", async () => {
    const base = await count({})
    expect(base).toBeGreaterThan(0)
    expect(await count({ system: 42, messages: "nope", tools: { name: "x" } })).toBe(base)
    expect(await count({ messages: [null, 7, { role: "user", content: [null, "x", { type: 3 }] }] })).toBeGreaterThan(base)
  })

  it("is deterministic, and a further message never lowers the count", async () => {
    const block = fc.oneof(
      fc.string().map((text) => ({ type: "text", text })),
      fc.constant(screenshot),
      fc.record({ name: fc.string(), city: fc.string() }).map(({ name, city }) => ({
        type: "tool_use",
        id: "toolu_1",
        name,
        input: { city }
      }))
    )
    const message = fc.record({
      role: fc.constantFrom("user", "assistant"),
      content: fc.oneof(fc.string(), fc.array(block, { maxLength: 4 }))
    })
    await fc.assert(
      fc.asyncProperty(fc.array(message, { maxLength: 5 }), message, async (messages, extra) => {
        const before = await count({ messages })
        expect(await count({ messages: structuredClone(messages) })).toBe(before)
        expect(await count({ messages: [...messages, extra] })).toBeGreaterThan(before)
      }),
      { numRuns: 100 }
    )
  })
})
