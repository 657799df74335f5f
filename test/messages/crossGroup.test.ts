/**
 * A Claude Code conversation that began on an OpenAI group (its thinking blocks carry our `mgr1.`
 * signatures) and goes on on an Anthropic group: those blocks would be refused by Anthropic, so the
 * passthrough leaves them out; Anthropic's own thinking blocks go through as they are.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { encodeThinkingSignature, withoutOurThinking } from "../../src/translate/messages/signature.js"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "../support/gateway.js"

const ours = { type: "thinking", thinking: "planned on gpt", signature: encodeThinkingSignature({ id: "rs_1", encrypted_content: "gAAA" }) }
const theirs = { type: "thinking", thinking: "planned on claude", signature: "EqQBCkYIBhgCIkD" }

const conversation = (thinking: Record<string, unknown>) => [
  { role: "user" as const, content: "first question" },
  { role: "assistant" as const, content: [thinking, { type: "text", text: "first answer" }] },
  { role: "user" as const, content: "second question" }
]

describe("thinking signed for an OpenAI group, sent to an Anthropic group", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ close, gw, upstream } = await startWithFakeUpstream())
  })
  afterAll(() => close())

  const sentAssistant = () => {
    const body = upstream.requests.at(-1)?.body as { messages: Array<{ role: string; content: unknown }> }
    return body.messages[1]?.content
  }

  it("leaves our blocks out and keeps the rest of the conversation", async () => {
    const client = new Anthropic({ apiKey: "sk-test-anthropic-0001", baseURL: gw.url, maxRetries: 0 })
    // The SDK's types do not know every block shape a client replays; the wire is what matters here.
    const messages = conversation(ours) as unknown as Anthropic.MessageParam[]
    const answer = await client.messages.create({ model: "claude-sonnet-4-6", max_tokens: 64, messages })
    expect(answer.content[0]?.type).toBe("text")
    expect(sentAssistant()).toEqual([{ type: "text", text: "first answer" }])
  })

  it("passes Anthropic's own thinking blocks as they are", async () => {
    const client = new Anthropic({ apiKey: "sk-test-anthropic-0001", baseURL: gw.url, maxRetries: 0 })
    const messages = conversation(theirs) as unknown as Anthropic.MessageParam[]
    await client.messages.create({ model: "claude-sonnet-4-6", max_tokens: 64, messages })
    expect(sentAssistant()).toEqual([theirs, { type: "text", text: "first answer" }])
  })

  it("changes nothing in a body without our signatures", () => {
    expect(withoutOurThinking({ messages: conversation(theirs) })).toBeUndefined()
    expect(withoutOurThinking({ messages: "not a list" })).toBeUndefined()
  })
})
