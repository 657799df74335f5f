/** src/endpoints/responses/policy.ts: model lists, model offers, moderation texts, image-generation intent. */
import { describe, expect, it } from "@effect/vitest"
import type { Account, Group } from "../../src/domain/model.js"
import { offersModel } from "../../src/domain/model.js"
import { listedModels } from "../../src/domain/modelList.js"
import { moderationTexts, roughInputTokens, wantsImageGeneration } from "../../src/endpoints/responses/policy.js"

const group = (overrides: Partial<Group> = {}): Group => ({
  name: "g",
  platform: "openai",
  billing: "balance",
  allowImageGeneration: false,
  rateMultiplier: 1,
  models: undefined,
  moderation: "off",
  ...overrides
})

const account = (name: string, modelMapping?: Record<string, string>): Account => ({
  name,
  platform: "openai",
  kind: "simulator",
  baseUrl: "http://localhost",
  secret: undefined,
  groups: ["g"],
  priority: 50,
  concurrency: 1,
  modelMapping
})

const defaults = { openai: ["o1", "o2"], anthropic: ["a1"], antigravity: ["ag1"], openai_chat: [] }

describe("listedModels", () => {
  it("the group's list wins", () => {
    expect(listedModels(group({ models: ["z", "a"] }), [account("x", { m: "m" })], defaults)).toEqual(["z", "a"])
  })
  it("else the sorted union of the accounts' mapping keys", () => {
    const accounts = [account("x", { b: "1", a: "2" }), account("y", { c: "3", a: "4" }), account("z")]
    expect(listedModels(group(), accounts, defaults)).toEqual(["a", "b", "c"])
  })
  it("else the platform defaults (an empty list counts as none)", () => {
    expect(listedModels(group({ models: [] }), [account("x")], defaults)).toEqual(["o1", "o2"])
    expect(listedModels(group({ platform: "anthropic" }), [], defaults)).toEqual(["a1"])
  })
})

describe("offersModel", () => {
  it("the group's list decides when present", () => {
    expect(offersModel(group({ models: ["m"] }), [account("x")], "m")).toBe(true)
    expect(offersModel(group({ models: ["m"] }), [account("x")], "n")).toBe(false)
  })
  it("else some account must serve it; an account without a mapping serves anything", () => {
    expect(offersModel(group(), [account("x", { m: "m2" })], "m")).toBe(true)
    expect(offersModel(group(), [account("x", { m: "m2" })], "n")).toBe(false)
    expect(offersModel(group(), [account("x", { m: "m2" }), account("y")], "n")).toBe(true)
  })
  it("a group with no accounts offers everything (the scheduler then says 503)", () => {
    expect(offersModel(group(), [], "anything")).toBe(true)
  })
})

describe("moderationTexts", () => {
  it("reads instructions, a string input, message content parts and tool outputs", () => {
    const texts = moderationTexts({
      model: "m",
      instructions: "be nice",
      input: [
        { role: "user", content: "plain" },
        { role: "user", content: [{ type: "input_text", text: "part one" }, { type: "input_image", image_url: "x" }] },
        { type: "function_call_output", call_id: "c", output: "tool said" },
        { type: "function_call", call_id: "c", name: "f", arguments: "{\"ignored\":true}" }
      ]
    })
    expect(texts).toEqual(["be nice", "plain", "part one", "tool said"])
    expect(moderationTexts({ model: "m", input: "just this" })).toEqual(["just this"])
  })
})

describe("wantsImageGeneration", () => {
  const yes = [
    { model: "gpt-image-1" },
    { model: " GPT-IMAGE-1.5 " },
    { model: "m", tools: [{ type: "image_generation" }] },
    { model: "m", tools: [{ type: "function", name: "image_generation" }] },
    { model: "m", tools: [{ type: "function", name: "image_gen.generate" }] },
    { model: "m", tools: [{ type: "function", name: "image_gen__edit" }] },
    { model: "m", tool_choice: "image_generation" },
    { model: "m", tool_choice: { type: "image_generation" } },
    { model: "m", tool_choice: { type: "function", name: "image_gen.create" } },
    { model: "m", tool_choice: { type: "allowed_tools", tool: { type: "image_generation" } } },
    { model: "m", tool_choice: { type: "function", function: { name: "image_generation" } } }
  ]
  const no = [
    { model: "gpt-5.4" },
    { model: "gpt-image" },
    { model: "m", tools: [{ type: "function", name: "generate_report" }] },
    { model: "m", tools: [{ type: "function", name: "image_generator_docs" }] },
    { model: "m", tools: [{ type: "web_search" }] },
    { model: "m", tool_choice: "auto" },
    { model: "m", tool_choice: { type: "function", name: "generate_image_report" } }
  ]
  it.each(yes.map((b) => [JSON.stringify(b), b] as const))("intent: %s", (_name, body) => {
    expect(wantsImageGeneration(body)).toBe(true)
  })
  it.each(no.map((b) => [JSON.stringify(b), b] as const))("no intent: %s", (_name, body) => {
    expect(wantsImageGeneration(body)).toBe(false)
  })
})

describe("roughInputTokens (the estimate a tokens-per-minute limit admits on)", () => {
  it("counts the text the model reads and the tool definitions, at four characters a token", () => {
    expect(roughInputTokens({ instructions: "a".repeat(40), input: "b".repeat(40) })).toBe(20)
    const tools = [{ type: "function", name: "lookup", description: "d".repeat(400) }]
    expect(roughInputTokens({ input: "hi", tools })).toBe(Math.ceil((2 + JSON.stringify(tools).length) / 4))
  })

  it("leaves out images: their base64 says nothing about their tokens", () => {
    const image = { type: "input_image", image_url: `data:image/png;base64,${"A".repeat(100_000)}` }
    expect(roughInputTokens({ input: [{ role: "user", content: [{ type: "input_text", text: "abcd" }, image] }] })).toBe(1)
  })
})
