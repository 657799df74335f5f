/**
 * src/endpoints/kit/frameGuard.ts: every upstream frame loses the account's key; a frame that is
 * not an event of its platform's stream, or is an error, also loses credential shapes; an ordinary
 * frame comes back as the same object (nothing copied on the hot path).
 */
import { Redacted } from "effect"
import { describe, expect, it } from "vitest"
import type { Account } from "../../src/domain/model.js"
import { SseDecoder } from "../../src/domain/sse.js"
import { frameGuard } from "../../src/endpoints/kit/frameGuard.js"
import { openOutputChars } from "../../src/endpoints/kit/budget.js"

const SECRET = "acct-secret-0123456789"
const account = (platform: "openai" | "anthropic"): Account => ({
  name: "a",
  platform,
  kind: "http",
  baseUrl: "http://127.0.0.1:1",
  secret: Redacted.make(SECRET),
  groups: ["g"],
  priority: 0,
  concurrency: 1,
  modelMapping: undefined
})
const frameOf = (text: string) => new SseDecoder().push(new TextEncoder().encode(text))[0]!

describe("frameGuard", () => {
  it("gives an event without credentials back as it came", () => {
    const frame = frameOf(`event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Basic authentication, api_key = x"}\n\n`)
    expect(frameGuard(account("openai"))(frame)).toBe(frame)
  })

  it("takes the account's key out of an event's text and data, and nothing else", () => {
    const guarded = frameGuard(account("anthropic"))(
      frameOf(`event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"${SECRET} Bearer abcdefghijkl"}}\n\n`)
    )
    expect(guarded.data).toBe(`{"type":"content_block_delta","delta":{"type":"text_delta","text":"[redacted] Bearer abcdefghijkl"}}`)
    expect(guarded.text).toBe(`event: content_block_delta\ndata: ${guarded.data}\n\n`)
  })

  it.each([
    ["an unknown event", `event: debug\ndata: {"type":"debug","h":"Bearer abcdefghijkl"}\n\n`],
    ["an error", `event: error\ndata: {"type":"error","error":{"message":"Bearer abcdefghijkl"}}\n\n`],
    ["data that is not JSON", `event: response.output_text.delta\ndata: Bearer abcdefghijkl\n\n`],
    ["another platform's event", `event: message_start\ndata: {"type":"message_start","h":"Bearer abcdefghijkl"}\n\n`]
  ])("reads %s as closely as an error body", (_, text) => {
    const guarded = frameGuard(account("openai"))(frameOf(text))
    expect(guarded.text).not.toContain("abcdefghijkl")
    expect(guarded.data).not.toContain("abcdefghijkl")
  })
})

describe("openOutputChars", () => {
  it.each([
    ["a Responses delta", "event: response.output_text.delta\ndata: {", 5000],
    ["an Anthropic delta", "event: content_block_delta\ndata: {", 5000],
    ["a delta named in its data", `data: {"type":"response.function_call_arguments.delta","delta":"`, 5000],
    ["a frame not named yet", "data: {\"delta\":\"", 5000],
    ["a frame whose event line is not whole yet", "event: response.outp", 5000],
    ["the echo of the request", "event: response.created\ndata: {", 0],
    ["the echo of the output", "event: response.output_text.done\ndata: {", 0],
    ["an image", "event: response.image_generation_call.partial_image\ndata: {", 0]
  ])("%s", (_, head, expected) => {
    expect(openOutputChars({ pendingBytes: 5000, pendingHead: head })).toBe(expected)
  })
})
