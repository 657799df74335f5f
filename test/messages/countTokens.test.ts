/**
 * POST /v1/messages/count_tokens through the SDK: an Anthropic group gets its upstream's count, an
 * OpenAI group a local one (never a 404); neither is a billed request.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { DOORS, keyFor, type MessagesSetup, sdk, startMessagesGateway, usageTotals } from "../support/messagesGateway.js"
import { upstreamTokenCount } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

describe.each(DOORS)("count_tokens, $platform group", (door) => {
  const key = keyFor(door, "count")
  const params = {
    model: door.model,
    system: "You are a careful assistant.",
    messages: [{ role: "user" as const, content: "How many tokens is this sentence, roughly?" }]
  }

  it("messages.countTokens answers a count, and it is not billed", async () => {
    const before = setup.upstream.requests.length
    const count = await sdk(setup.gw, key).messages.countTokens(params)
    const reached = setup.upstream.requests.slice(before)
    if (door.passthrough) {
      expect(reached).toHaveLength(1)
      expect(reached[0]?.path).toBe("/v1/messages/count_tokens")
      expect(reached[0]?.credential).toBe("sk-up-an-main")
      expect(count.input_tokens).toBe(upstreamTokenCount(reached[0]!.raw))
    } else {
      // Counted here: the upstream has no such endpoint.
      expect(reached).toHaveLength(0)
      expect(count.input_tokens).toBeGreaterThan(0)
    }
    expect(await usageTotals(setup.gw, key)).toMatchObject({ requests: 0, input_tokens: 0, output_tokens: 0, cost: 0 })
  })

  it("the beta client's countTokens (?beta=true) works too", async () => {
    const count = await sdk(setup.gw, key).beta.messages.countTokens({ ...params, betas: ["foo-2025-01-01"] })
    expect(count.input_tokens).toBeGreaterThan(0)
    if (door.passthrough) {
      const sent = setup.upstream.requests.at(-1)!
      expect(sent.path).toBe("/v1/messages/count_tokens")
      expect(sent.headers["anthropic-beta"]).toContain("foo-2025-01-01")
      expect(count.input_tokens).toBe(upstreamTokenCount(sent.raw))
    }
    expect((await usageTotals(setup.gw, key)).requests).toBe(0)
  })

  it("a model the account maps: counted for the upstream's name", async () => {
    const count = await sdk(setup.gw, key).messages.countTokens({ ...params, model: door.mapped.requested })
    expect(count.input_tokens).toBeGreaterThan(0)
    if (door.passthrough) {
      const sent = setup.upstream.requests.at(-1)!
      expect(sent.path).toBe("/v1/messages/count_tokens")
      expect(sent.body?.["model"]).toBe(door.mapped.upstream)
      expect(count.input_tokens).toBe(upstreamTokenCount(sent.raw))
    }
  })

  it("a longer request counts more", async () => {
    const client = sdk(setup.gw, key)
    const short = await client.messages.countTokens(params)
    const long = await client.messages.countTokens({
      ...params,
      messages: [{ role: "user", content: "How many tokens is this sentence, roughly? ".repeat(50) }]
    })
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens)
  })
})
