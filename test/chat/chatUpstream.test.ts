/**
 * An `openai_chat` group (an OpenAI-compatible Chat Completions server behind the gateway) read by
 * every door's real client: the openai SDK's Responses `stream()` and `create`, the Anthropic
 * SDK's `messages.stream()`, and the openai SDK's Chat calls (passed through).
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import type { ResponseInput } from "openai/resources/responses/responses"
import { call, readEvents } from "../http/helpers.js"
import { startChatUpstream, type ChatUpstream, USAGE } from "../support/chatUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-chatgroup-0001"

const config = (upstream: string) => ({
  groups: [{ name: "local", platform: "openai_chat", models: ["qwen3-coder"] }],
  users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
  keys: [{ key: KEY, user: "alice", group: "local", name: "local-key" }],
  accounts: [{
    name: "vllm",
    platform: "openai_chat",
    base_url: `${upstream}/v1`,
    groups: ["local"],
    model_mapping: { "qwen3-coder": "Qwen/Qwen3-Coder-30B" },
    headers: { "X-Title": "modelgate-test" }
  }]
})

describe("an openai_chat group", () => {
  let upstream: ChatUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startChatUpstream()
    gw = await startGateway({ config: config(upstream.url) })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })

  it("serves a Responses stream the strictest client reads, from chunks", async () => {
    const final = await openai().responses.stream({ model: "qwen3-coder", input: "Say hello" }).finalResponse()
    expect(final.output_text).toBe("Hello from the chat server!")
    expect(final.model).toBe("qwen3-coder")
    expect(final.usage).toMatchObject({ input_tokens: USAGE.prompt_tokens, output_tokens: USAGE.completion_tokens, input_tokens_details: { cached_tokens: USAGE.cached } })
    const sent = upstream.requests.at(-1)
    expect(sent?.body).toMatchObject({ model: "Qwen/Qwen3-Coder-30B", stream: true, stream_options: { include_usage: true } })
    expect(sent?.headers["x-title"]).toBe("modelgate-test")
    expect(sent?.headers["authorization"]).toBeUndefined()
  })

  it("serves Responses JSON with a function call, and the tool round trip after it", async () => {
    const tools = [{ type: "function" as const, name: "get_weather", strict: false, parameters: { type: "object", properties: { city: { type: "string" } } } }]
    const first = await openai().responses.create({ model: "qwen3-coder", input: "Call get_weather for `Paris`", tools })
    const call = first.output.find((item) => item.type === "function_call")
    expect(call).toMatchObject({ name: "get_weather", arguments: "{\"city\":\"Paris\"}" })
    if (call?.type !== "function_call") throw new Error("no call")
    const second = await openai().responses.create({
      model: "qwen3-coder",
      tools,
      input: [
        { role: "user", content: "Call get_weather for `Paris`" },
        { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: "function_call_output", call_id: call.call_id, output: "Sunny" }
      ]
    })
    expect(second.output_text).toBe("The tool said: Sunny")
    expect(upstream.requests.at(-1)?.body["messages"]).toMatchObject([
      { role: "user" },
      { role: "assistant", tool_calls: [{ id: call.call_id, function: { name: "get_weather" } }] },
      { role: "tool", tool_call_id: call.call_id, content: "Sunny" }
    ])
  })

  it("serves the Messages door: the Anthropic SDK's stream, reasoning as thinking", async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0 })
    const message = await anthropic.messages.stream({ model: "qwen3-coder", max_tokens: 256, messages: [{ role: "user", content: "Say hello" }] }).finalMessage()
    expect(message.content.find((b) => b.type === "text")).toMatchObject({ text: "Hello from the chat server!" })
    expect(message.content[0]).toMatchObject({ type: "thinking", thinking: "Greet." })
    expect(message.usage.output_tokens).toBe(USAGE.completion_tokens)
  })

  it("passes Chat requests through, fields Responses lacks included", async () => {
    const completion = await openai().chat.completions.create({ model: "qwen3-coder", messages: [{ role: "user", content: "Say hello" }], stop: ["\n\n"], seed: 7 })
    expect(completion.choices[0]?.message.content).toBe("Hello from the chat server!")
    expect(completion.model).toBe("qwen3-coder")
    expect(upstream.requests.at(-1)?.body).toMatchObject({ model: "Qwen/Qwen3-Coder-30B", stop: ["\n\n"], seed: 7 })
    const streamed = await openai().chat.completions.stream({ model: "qwen3-coder", messages: [{ role: "user", content: "Say hello" }] }).finalChatCompletion()
    expect(streamed.choices[0]?.message.content).toBe("Hello from the chat server!")
  })

  it("compacts through one summarising Chat call, and reads the window back on the next turn", async () => {
    const compacted = await openai().responses.compact({
      model: "qwen3-coder",
      input: [{ role: "user", content: "Plan the launch" }, { role: "assistant", content: "Step one: checklist." }]
    })
    expect(compacted.object).toBe("response.compaction")
    expect(compacted.output.map((o) => o.type)).toEqual(["message", "compaction"])
    const asked = upstream.requests.at(-1)?.body
    expect(asked?.["stream"]).toBe(false)
    const askedMessages = asked?.["messages"] as Array<{ role: string; content: unknown }>
    expect(JSON.stringify(askedMessages.at(-1)?.content)).toContain("compact this conversation")
    // The window goes back as input: the server reads the summary where the turns were.
    const next = await openai().responses.create({
      model: "qwen3-coder",
      // The window's items as the SDK typed them for the compact answer; the create input takes them as they are.
      input: [...compacted.output, { role: "user", content: "Go on" }] as unknown as ResponseInput
    })
    expect(next.output_text).not.toBe("")
    const sent = JSON.stringify(upstream.requests.at(-1)?.body["messages"])
    expect(sent).toContain("compacted to save context")
    expect(sent).toContain("Hello from the chat server!")
  })

  it("every Responses body and event it writes from Chat answers is an Open Responses one", async () => {
    // `call` and `readEvents` check each body and event against the spec's schema (test/support/openResponses.ts).
    const json = await call(gw.url, "/v1/responses", { key: KEY, body: { model: "qwen3-coder", input: "Call get_weather for `Oslo`", tools: [{ type: "function", name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }] } })
    expect(json.status).toBe(200)
    const streamed = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen3-coder", input: "Say hello", stream: true })
    })
    const { events, error } = await readEvents(streamed)
    expect(error).toBeUndefined()
    expect(events.at(-1)?.["type"]).toBe("response.completed")
  })

  it("lists the group's models", async () => {
    const models = []
    for await (const m of openai().models.list()) models.push(m.id)
    expect(models).toEqual(["qwen3-coder"])
  })
})
