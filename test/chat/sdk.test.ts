/**
 * The Chat Completions door read by the openai SDK on both group platforms, in front of the fake
 * upstream (OpenAI Responses and Anthropic Messages on the wire): `create`, `stream()` with
 * `finalChatCompletion()`, the usage it settled, and errors in OpenAI's envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { GROUPS, startThreeGroups, type ThreeGroups } from "./threeGroups.js"

type Setup = ThreeGroups


describe("POST /v1/chat/completions through the openai SDK", () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await startThreeGroups()
  })
  afterAll(() => setup.close())

  it("anthropic group: thinking goes out in reasoning_details and its signature comes back on the next turn", async () => {
    const client = new OpenAI({ baseURL: `${setup.gw.url}/v1`, apiKey: "sk-test-anthropic-0001", maxRetries: 0 })
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]
    const question = { role: "user" as const, content: "What is the weather in Paris? Use get_weather." }
    const first = await client.chat.completions.create({ model: "claude-sonnet-4-5", reasoning_effort: "high", messages: [question], tools })
    const message = first.choices[0]?.message
    const call = message?.tool_calls?.[0]
    if (message === undefined || call === undefined) throw new Error("no tool call")
    expect(message).toMatchObject({ reasoning_details: [{ type: "reasoning.encrypted" }] })
    const thought = setup.upstream.requests.length
    // The assistant message goes back as the SDK gave it, as runTools and most agent loops do.
    await client.chat.completions.create({
      model: "claude-sonnet-4-5",
      reasoning_effort: "high",
      tools,
      messages: [question, message, { role: "tool", tool_call_id: call.id, content: "Sunny" }]
    })
    const sent = setup.upstream.requests.slice(thought).map((r) => r.body as { messages?: Array<{ role: string; content: unknown }> })
    const assistant = sent.at(-1)?.messages?.find((m) => m.role === "assistant")
    const blocks = Array.isArray(assistant?.content) ? (assistant.content as Array<Record<string, unknown>>) : []
    expect(blocks[0]).toMatchObject({ type: "thinking", signature: expect.stringMatching(/\S/) })
    expect(blocks.some((b) => b["type"] === "tool_use")).toBe(true)
  })

  for (const group of GROUPS) {
    describe(group.name, () => {
      const client = () => new OpenAI({ baseURL: `${setup.gw.url}/v1`, apiKey: group.key, maxRetries: 0 })

      it("answers create() with a chat.completion", async () => {
        const completion = await client().chat.completions.create({
          model: group.model,
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello" }]
        })
        expect(completion.object).toBe("chat.completion")
        expect(completion.model).toBe(group.model)
        expect(completion.choices[0]?.finish_reason).toBe("stop")
        expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0)
        expect(completion.usage?.prompt_tokens).toBeGreaterThan(0)
      })

      it("streams chunks the SDK accumulates, with usage when asked", async () => {
        const stream = client().chat.completions.stream({
          model: group.model,
          messages: [{ role: "user", content: "Say hello" }],
          stream_options: { include_usage: true }
        })
        const final = await stream.finalChatCompletion()
        expect(final.choices[0]?.message.content?.length).toBeGreaterThan(0)
        expect(final.choices[0]?.finish_reason).toBe("stop")
        expect(final.usage?.completion_tokens).toBeGreaterThan(0)
      })

      it("runs a tool round trip with runTools", async () => {
        const calls: Array<string> = []
        const runner = client().chat.completions.runTools({
          model: group.model,
          messages: [{ role: "user", content: "What is the weather in Paris? Use get_weather." }],
          tools: [{
            type: "function",
            function: {
              name: "get_weather",
              description: "The weather in a city",
              parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
              function: (args: { city: string }) => {
                calls.push(args.city)
                return `Sunny in ${args.city}`
              },
              parse: JSON.parse
            }
          }]
        })
        const content = await runner.finalContent()
        expect(calls.length).toBe(1)
        expect(content?.length).toBeGreaterThan(0)
        const messages = runner.messages
        expect(messages.some((m) => m.role === "tool")).toBe(true)
      })

      it("writes data-only SSE that ends with [DONE]", async () => {
        const response = await fetch(`${setup.gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${group.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: group.model, stream: true, messages: [{ role: "user", content: "Say hello" }] })
        })
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
        expect(response.headers.get("x-request-id")).toBeTruthy()
        const text = await response.text()
        const frames = text.split("\n\n").filter((f) => f !== "")
        expect(frames.every((f) => f.startsWith("data: "))).toBe(true)
        expect(frames.at(-1)).toBe("data: [DONE]")
        const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice("data: ".length)) as Record<string, unknown>)
        expect(chunks.every((c) => c["object"] === "chat.completion.chunk")).toBe(true)
        // No usage chunk unless asked for.
        expect(chunks.some((c) => "usage" in c)).toBe(false)
      })

      it(group.key === "sk-test-chat-0001"
        ? "passes n > 1 to the Chat server, which honours it"
        : "refuses n > 1 with a 400 naming the field, in OpenAI's envelope", async () => {
        const answer = await client().chat.completions.create({ model: group.model, messages: [{ role: "user", content: "x" }], n: 2 })
          .then(() => undefined, (e: unknown) => e)
        if (group.key === "sk-test-chat-0001") {
          expect(answer).toBeUndefined()
          expect(setup.chat.requests.at(-1)?.body["n"]).toBe(2)
          return
        }
        expect(answer).toBeInstanceOf(OpenAI.BadRequestError)
        expect((answer as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("n")
      })
    })
  }
})
