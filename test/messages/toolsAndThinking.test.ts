/**
 * Multi-turn Messages conversations through the gateway on both platforms: a tool call and its
 * result (also a failed one), and thinking whose block, sent back next turn, reaches the upstream
 * as what the upstream made (the same signature; for an OpenAI group the same reasoning item).
 */
import type Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { DOORS, keyFor, type MessagesSetup, sdk, startMessagesGateway } from "../support/messagesGateway.js"
import { type Json, responsesAnswer } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

const last = () => setup.upstream.requests.at(-1)!

const weather: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

const question: Anthropic.MessageParam = { role: "user", content: "What's the weather in Paris?" }

describe.each(DOORS)("tools and thinking, $platform group", (door) => {
  const key = keyFor(door, "main")

  /** Turn 1 (a tool call), then turn 2 with its result; returns what the upstream got for turn 2. */
  const roundTrip = async (result: { readonly content: string; readonly is_error?: true }) => {
    const client = sdk(setup.gw, key)
    const first = await client.messages.create({ model: door.model, max_tokens: 512, tools: [weather], messages: [question] })
    expect(first.stop_reason).toBe("tool_use")
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")
    expect(call?.name).toBe("get_weather")
    expect(typeof (call?.input as { city?: unknown } | undefined)?.city).toBe("string")
    const second = await client.messages.create({
      model: door.model,
      max_tokens: 512,
      tools: [weather],
      messages: [
        question,
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: call!.id, ...result }] }
      ]
    })
    expect(second.stop_reason).toBe("end_turn")
    return { call: call!, second, upstream: last() }
  }

  it("a tool call, and its tool_result reaching the upstream in its own format", async () => {
    const { call, second, upstream } = await roundTrip({ content: "Sunny, 21C" })
    expect(second.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")).toContain("Sunny, 21C")
    if (door.passthrough) {
      const messages = upstream.body?.["messages"] as Array<{ role: string; content: Array<Json> }>
      expect(messages[1]?.content).toContainEqual(expect.objectContaining({ type: "tool_use", id: call.id, name: "get_weather" }))
      expect(messages[2]?.content).toEqual([{ type: "tool_result", tool_use_id: call.id, content: "Sunny, 21C" }])
    } else {
      const input = upstream.body?.["input"] as Array<Json>
      const callItem = input.find((i) => i["type"] === "function_call")
      expect(callItem).toMatchObject({ call_id: call.id, name: "get_weather", arguments: JSON.stringify(call.input) })
      const output = input.find((i) => i["type"] === "function_call_output")
      expect(output).toMatchObject({ call_id: call.id, output: "Sunny, 21C" })
      expect(input.indexOf(output!)).toBeGreaterThan(input.indexOf(callItem!))
      const tools = upstream.body?.["tools"] as Array<Json>
      expect(tools[0]).toMatchObject({ type: "function", name: "get_weather", parameters: weather.input_schema })
    }
  })

  it("a failed tool (is_error: true) reaches the upstream as a failure", async () => {
    const { call, upstream } = await roundTrip({ content: "city service unreachable", is_error: true })
    if (door.passthrough) {
      const messages = upstream.body?.["messages"] as Array<{ content: Array<Json> }>
      expect(messages[2]?.content).toEqual([{ type: "tool_result", tool_use_id: call.id, content: "city service unreachable", is_error: true }])
    } else {
      const output = (upstream.body?.["input"] as Array<Json>).find((i) => i["type"] === "function_call_output")
      expect(output?.["call_id"]).toBe(call.id)
      // Responses has no error flag: the model must still read that the call failed.
      expect(output?.["output"]).toMatch(/error/i)
      expect(output?.["output"]).toContain("city service unreachable")
    }
  })

  it("a streamed tool call: finalMessage carries the parsed input", async () => {
    const client = sdk(setup.gw, key)
    const final = await client.messages.stream({ model: door.model, max_tokens: 512, tools: [weather], messages: [question] }).finalMessage()
    expect(final.stop_reason).toBe("tool_use")
    const call = final.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use")
    expect(call?.name).toBe("get_weather")
    expect(typeof (call?.input as { city?: unknown } | undefined)?.city).toBe("string")
  })
})

describe.each(DOORS)("thinking round trip, $platform group", (door) => {
  const key = keyFor(door, "main")
  const thinking = { type: "enabled", budget_tokens: 2048 } as const
  const firstTurn: Anthropic.MessageParam = { role: "user", content: "Think about prime numbers" }

  it("the thinking block of a streamed turn, sent back next turn, reaches the upstream as it was made", async () => {
    // An OpenAI upstream answers with a reasoning item only when asked; the simulator never does.
    const reasoning = { type: "reasoning", id: "rs_roundtrip_1", summary: [{ type: "summary_text", text: "Primes are odd, mostly." }], encrypted_content: "gAAAA-opaque-blob-1" }
    const unscript = setup.upstream.script((seen) => {
      if (door.passthrough || seen.path !== "/v1/responses" || seen.body?.["reasoning"] === undefined) return undefined
      const input = seen.body["input"] as Array<Json>
      if (input.length !== 1) return undefined
      const answer = responsesAnswer("resp_think_1", door.model, [
        reasoning,
        { type: "message", id: "msg_think_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "2, 3, 5, 7.", annotations: [] }] }
      ], { input: 20, cached: 0, output: 12 })
      return seen.body["stream"] === true ? { _tag: "Sse", events: answer.events, ending: "end" } : { _tag: "Json", status: 200, body: answer.json }
    })
    try {
      const client = sdk(setup.gw, key)
      const first = await client.messages.stream({ model: door.model, max_tokens: 4096, thinking, messages: [firstTurn] }).finalMessage()
      const turn1 = last()
      const block = first.content[0]
      expect(block?.type).toBe("thinking")
      if (block?.type !== "thinking") return
      expect(block.signature).not.toBe("")
      expect(first.content.some((b) => b.type === "text")).toBe(true)
      if (door.passthrough) {
        expect(turn1.body?.["thinking"]).toEqual(thinking)
      } else {
        expect(turn1.body?.["reasoning"]).toMatchObject({ effort: expect.any(String) })
        expect(turn1.body?.["include"]).toContain("reasoning.encrypted_content")
        expect(block.thinking).toBe("Primes are odd, mostly.")
      }

      const second = await client.messages.create({
        model: door.model,
        max_tokens: 4096,
        thinking,
        messages: [firstTurn, { role: "assistant", content: first.content }, { role: "user", content: "And the next one?" }]
      })
      expect(second.type).toBe("message")
      const turn2 = last()
      if (door.passthrough) {
        const assistant = (turn2.body?.["messages"] as Array<{ content: Array<Json> }>)[1]
        expect(assistant?.content[0]).toEqual({ type: "thinking", thinking: block.thinking, signature: block.signature })
      } else {
        const replayed = (turn2.body?.["input"] as Array<Json>).filter((i) => i["type"] === "reasoning")
        expect(replayed).toHaveLength(1)
        expect(replayed[0]).toMatchObject({ id: reasoning.id, encrypted_content: reasoning.encrypted_content })
      }
    } finally {
      unscript()
    }
  })

  it("a JSON turn's thinking block round-trips too", async () => {
    const reasoning = { type: "reasoning", id: "rs_roundtrip_2", summary: [{ type: "summary_text", text: "Short thought." }], encrypted_content: "gAAAA-opaque-blob-2" }
    const unscript = setup.upstream.script((seen) => {
      if (door.passthrough || seen.path !== "/v1/responses" || (seen.body?.["input"] as Array<Json>).length !== 1) return undefined
      const answer = responsesAnswer("resp_think_2", door.model, [
        reasoning,
        { type: "message", id: "msg_think_2", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Done.", annotations: [] }] }
      ], { input: 20, cached: 0, output: 5 })
      return { _tag: "Json", status: 200, body: answer.json }
    })
    try {
      const client = sdk(setup.gw, key)
      const first = await client.messages.create({ model: door.model, max_tokens: 4096, thinking, messages: [{ role: "user", content: "One quick thought" }] })
      const block = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === "thinking")
      expect(block?.signature).toBeTruthy()
      await client.messages.create({
        model: door.model,
        max_tokens: 4096,
        thinking,
        messages: [{ role: "user", content: "One quick thought" }, { role: "assistant", content: first.content }, { role: "user", content: "Go on" }]
      })
      if (door.passthrough) {
        const assistant = (last().body?.["messages"] as Array<{ content: Array<Json> }>)[1]
        expect(assistant?.content).toContainEqual({ type: "thinking", thinking: block!.thinking, signature: block!.signature })
      } else {
        const replayed = (last().body?.["input"] as Array<Json>).filter((i) => i["type"] === "reasoning")
        expect(replayed).toEqual([expect.objectContaining({ id: reasoning.id, encrypted_content: reasoning.encrypted_content })])
      }
    } finally {
      unscript()
    }
  })
})
