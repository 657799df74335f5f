/**
 * What a Messages request costs, as GET /v1/usage shows it for the key: the tokens the client was
 * told about, cache reads counted and priced as cache reads (the price table here makes them a
 * tenth of an input token), and a stream the client leaves mid-way settled exactly once.
 */
import type Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { simulateResponses } from "../../src/services/upstream/simulator/responses.js"
import { waitFor } from "../http/helpers.js"
import {
  DOORS,
  expectedCost,
  keyFor,
  type MessagesSetup,
  postMessages,
  sdk,
  startMessagesGateway,
  type UsageTotals,
  usageTotals
} from "../support/messagesGateway.js"
import { type Json, type Reply, responsesAnswer } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

/** The gateway's meaning of a Messages usage: input includes the cached reads and writes. */
const billed = (u: Anthropic.Usage) => {
  const cacheRead = u.cache_read_input_tokens ?? 0
  const cacheWrite = u.cache_creation_input_tokens ?? 0
  return { input: u.input_tokens + cacheRead + cacheWrite, cacheRead, cacheWrite, output: u.output_tokens }
}

const expectTotals = (totals: UsageTotals, requests: number, u: ReturnType<typeof billed>) => {
  expect(totals).toMatchObject({
    requests,
    input_tokens: u.input,
    output_tokens: u.output,
    cache_read_tokens: u.cacheRead,
    cache_creation_tokens: u.cacheWrite
  })
  expect(totals.cost).toBeCloseTo(expectedCost(u), 9)
}

describe.each(DOORS)("settlement, $platform group", (door) => {
  const key = keyFor(door, "usage")
  /** A long system prompt marked for caching: the passthrough upstream reports it as a cache read. */
  const system: Array<Anthropic.TextBlockParam> = [
    { type: "text", text: "You are a meticulous assistant who reads the whole repository first. ".repeat(20), cache_control: { type: "ephemeral" } }
  ]
  // An OpenAI upstream reports cached input only when it has it: scripted here, 60 of 100 cached.
  let unscript: () => void = () => undefined
  beforeAll(() => {
    unscript = setup.upstream.script((seen): Reply | undefined => {
      if (door.passthrough || seen.path !== "/v1/responses" || !seen.raw.includes("CACHED-USAGE")) return undefined
      const answer = responsesAnswer("resp_cached", door.model, [
        { type: "message", id: "msg_cached", role: "assistant", status: "completed", content: [{ type: "output_text", text: "From the cache.", annotations: [] }] }
      ], { input: 100, cached: 60, output: 10 })
      return seen.body?.["stream"] === true ? { _tag: "Sse", events: answer.events, ending: "end" } : { _tag: "Json", status: 200, body: answer.json }
    })
  })
  afterAll(() => unscript())

  it("JSON then stream: totals are the usage the client was told, cache reads priced as cache reads", async () => {
    expect((await usageTotals(setup.gw, key)).requests).toBe(0)
    const client = sdk(setup.gw, key)
    const params = { model: door.model, max_tokens: 256, system, messages: [{ role: "user" as const, content: "CACHED-USAGE question one" }] }
    const first = await client.messages.create(params)
    const one = billed(first.usage)
    expect(one.cacheRead).toBeGreaterThan(0)
    if (!door.passthrough) expect(first.usage).toMatchObject({ input_tokens: 40, cache_read_input_tokens: 60, output_tokens: 10 })
    await waitFor(async () => (await usageTotals(setup.gw, key)).requests >= 1)
    expectTotals(await usageTotals(setup.gw, key), 1, one)

    const second = await client.messages.stream({ ...params, messages: [{ role: "user", content: "CACHED-USAGE question two, streamed" }] }).finalMessage()
    const two = billed(second.usage)
    expect(two.cacheRead).toBeGreaterThan(0)
    await waitFor(async () => (await usageTotals(setup.gw, key)).requests >= 2)
    expectTotals(await usageTotals(setup.gw, key), 2, {
      input: one.input + two.input,
      cacheRead: one.cacheRead + two.cacheRead,
      cacheWrite: one.cacheWrite + two.cacheWrite,
      output: one.output + two.output
    })
  })

  describe("a client that leaves mid-stream", () => {
    const abortKey = keyFor(door, "abort")
    let held: ReadonlyArray<Json> = []
    let unhold: () => void = () => undefined
    beforeAll(() => {
      // The upstream sends the start and a first piece of text, then keeps the stream open.
      unhold = setup.upstream.script((seen): Reply | undefined => {
        if (seen.body === undefined || !seen.raw.includes("HOLD-ME")) return undefined
        const events = door.passthrough ? simulateMessages(seen.body).events : simulateResponses(seen.body, { createdAt: 1_750_000_000 }).events
        const first = events.findIndex((e) => e["type"] === "content_block_delta" || e["type"] === "response.output_text.delta")
        held = events.slice(0, first + 1)
        return { _tag: "Sse", events: held, ending: "hold" }
      })
    })
    afterAll(() => unhold())

    it("is settled exactly once, for its input and the output it was sent", async () => {
      const controller = new AbortController()
      const res = await postMessages(setup.gw, abortKey, {
        model: door.model,
        max_tokens: 512,
        stream: true,
        messages: [{ role: "user", content: "HOLD-ME and tell me a long story about the sea" }]
      }, { signal: controller.signal })
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let seen = ""
      while (!seen.includes("content_block_delta")) {
        const { done, value } = await reader.read()
        if (done) throw new Error(`stream ended early: ${seen}`)
        seen += decoder.decode(value, { stream: true })
      }
      controller.abort()
      const upstreamCall = setup.upstream.requests.filter((r) => r.raw.includes("HOLD-ME")).at(-1)!
      // The gateway gives up the upstream call too.
      await waitFor(() => upstreamCall.abandoned, 5_000)
      await waitFor(async () => (await usageTotals(setup.gw, abortKey)).requests >= 1, 5_000)
      const afterAbort = await usageTotals(setup.gw, abortKey)
      expect(afterAbort.requests).toBe(1)
      expect(afterAbort.input_tokens).toBeGreaterThan(0)
      expect(afterAbort.output_tokens).toBeGreaterThan(0)
      expect(afterAbort.cost).toBeGreaterThan(0)
      if (door.passthrough) {
        // message_start told the exact input: that is what is billed, not an estimate.
        const start = (held[0] as { message: { usage: Anthropic.Usage } }).message.usage
        expect(afterAbort.input_tokens).toBe(billed({ ...start, output_tokens: 0 }).input)
      }

      // One more request: the totals then count two, so the aborted one was not settled again.
      await sdk(setup.gw, abortKey).messages.create({ model: door.model, max_tokens: 64, messages: [{ role: "user", content: "after" }] })
      await waitFor(async () => (await usageTotals(setup.gw, abortKey)).requests >= 2, 5_000)
      expect((await usageTotals(setup.gw, abortKey)).requests).toBe(2)
    })
  })
})
