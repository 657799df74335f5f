/**
 * The strictest real client as an oracle: openai-node 7.x `responses.stream()` validates every
 * event (reference/protocols.md 1.7). Our translated streams are served to it through its `fetch`
 * option, with no network, and its final response must equal ours.
 */
import { describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import type { AnthropicStreamEvent } from "../../src/translate/index.js"
import { CUT_IN_TOOL, ERROR_MID_STREAM, MAX_TOKENS, PARALLEL_TOOLS, REDACTED, TEXT_ONLY, TEXT_TOOL_TEXT, THINKING_TOOL, TOOL_ONLY } from "./fixtures.js"
import { context, outputOf, runStream, terminal, toSse } from "./helpers.js"

const clientServing = (sse: string) =>
  new OpenAI({
    apiKey: "sk-test",
    baseURL: "http://gateway.test/v1",
    maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } })
  })

/** Codex's freeform apply_patch, answered by a lowered tool call upstream. */
const CUSTOM_REQUEST = { model: "claude-sonnet-4-5", tools: [{ type: "custom", name: "apply_patch" }] }
const CUSTOM_CALL: ReadonlyArray<AnthropicStreamEvent> = [
  ...TOOL_ONLY.slice(0, 1),
  { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_p", name: "apply_patch", input: {} } },
  { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "{\"input\": \"*** Begin" } },
  { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: " Patch\\n*** End Patch\"}" } },
  ...TOOL_ONLY.slice(-3)
]

const cases: ReadonlyArray<readonly [string, ReadonlyArray<AnthropicStreamEvent>, Record<string, unknown>?]> = [
  ["text only", TEXT_ONLY],
  ["parallel tool calls", PARALLEL_TOOLS],
  ["thinking + tool use", THINKING_TOOL],
  ["redacted thinking", REDACTED],
  ["text, tool, text", TEXT_TOOL_TEXT],
  ["max_tokens", MAX_TOKENS],
  ["upstream error event", ERROR_MID_STREAM],
  ["stream cut inside a tool call", CUT_IN_TOOL],
  ["custom tool call", CUSTOM_CALL, CUSTOM_REQUEST]
]

describe("openai-node responses.stream() accepts the translated streams", () => {
  for (const [name, upstream, request] of cases) {
    it(name, async () => {
      const out = runStream(upstream, context(request))
      const stream = clientServing(toSse(out)).responses.stream({ model: "claude-sonnet-4-5", input: "hi" })
      const seen: Array<string> = []
      stream.on("event", (e) => seen.push(e.type))
      const final = await stream.finalResponse()
      expect(seen).toEqual(out.map((e) => e.type))
      expect(final.id).toBe("resp_test0001")
      expect(final.status).toBe(terminal(out)["status"])
      // The SDK only adds its own `parsed` / `parsed_arguments` helpers to our items.
      expect(final.output).toMatchObject(outputOf(terminal(out)))
    })
  }
})
