/**
 * What a Chat server refuses reaches the client clearly, whatever door it came through: a model
 * that takes no tools (or no images) answers 400, and the client gets a 400 in its door's shape
 * with the server's words, not a 5xx, and no other account is tried for it.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { defaultScript, startChatUpstream, type ChatUpstream } from "../support/chatUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const KEY = "sk-test-chat-refusals-0001"
const NO_TOOLS = "this model does not support tools"

describe("a Chat server's refusal of tools", () => {
  let upstream: ChatUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startChatUpstream((body) =>
      Array.isArray(body["tools"]) && body["tools"].length > 0 ? { _tag: "Error", status: 400, message: NO_TOOLS } : defaultScript(body))
    gw = await startGateway({
      config: {
        groups: [{ name: "local", platform: "openai_chat", models: ["llama3"] }],
        users: [{ name: "alice", balance_usd: 10 }],
        keys: [{ key: KEY, user: "alice", group: "local" }],
        accounts: [{ name: "llamacpp", platform: "openai_chat", base_url: `${upstream.url}/v1`, groups: ["local"] }]
      }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const tool = { type: "function" as const, function: { name: "f", parameters: { type: "object", properties: {} } } }

  it("is a 400 with the server's words on the Chat, Responses and Messages doors", async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 })
    const chat = await openai.chat.completions.create({ model: "llama3", messages: [{ role: "user", content: "hi" }], tools: [tool] }).catch((e: unknown) => e)
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError)
    expect((chat as Error).message).toContain(NO_TOOLS)

    const responses = await openai.responses.create({ model: "llama3", input: "hi", tools: [{ type: "function", name: "f", strict: false, parameters: {} }] }).catch((e: unknown) => e)
    expect(responses).toBeInstanceOf(OpenAI.BadRequestError)
    expect((responses as Error).message).toContain(NO_TOOLS)

    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0 })
    const messages = await anthropic.messages.create({
      model: "llama3", max_tokens: 32, messages: [{ role: "user", content: "hi" }], tools: [{ name: "f", input_schema: { type: "object" } }]
    }).catch((e: unknown) => e)
    expect(messages).toBeInstanceOf(Anthropic.BadRequestError)
    expect((messages as Error).message).toContain(NO_TOOLS)
  })
})
