/**
 * Property: any well-formed Anthropic stream (arbitrary blocks, arbitrary delta splits, pings
 * anywhere, and optionally an error event or a cut) translates to a Responses stream that passes
 * the client grammar; complete streams carry exactly the generated text and arguments.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { type AnthropicStreamEvent, decodeReasoning, upstreamToolName } from "../../src/translate/index.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { context, outputOf, runStream, terminal } from "./helpers.js"

type Block =
  | { readonly kind: "text"; readonly pieces: ReadonlyArray<string> }
  | { readonly kind: "thinking"; readonly pieces: ReadonlyArray<string>; readonly signature: string }
  | { readonly kind: "tool"; readonly id: string; readonly name: string; readonly pieces: ReadonlyArray<string> }
  | { readonly kind: "redacted"; readonly data: string }
  | { readonly kind: "custom"; readonly id: string; readonly input: string; readonly pieces: ReadonlyArray<string> }

/** The client's tools: a plain function, a namespaced one, and a freeform custom tool. */
const REQUEST = {
  model: "claude-sonnet-4-5",
  tools: [
    { type: "function", name: "get_weather" },
    { type: "namespace", name: "ns", description: "", tools: [{ type: "function", name: "run.shell" }] },
    { type: "custom", name: "apply_patch" }
  ]
}
/** Upstream name -> what the client must see. */
const TOOL_NAMES: ReadonlyArray<readonly [string, Record<string, string>]> = [
  ["get_weather", { name: "get_weather" }],
  [upstreamToolName("run.shell", "ns"), { name: "run.shell", namespace: "ns" }]
]

type Ending = { readonly kind: "stop"; readonly reason: string } | { readonly kind: "error"; readonly at: number } | {
  readonly kind: "cut"
  readonly at: number
}

const text = fc.oneof(fc.string(), fc.unicodeString())

/** A text split at arbitrary points, the way input_json_delta arrives. */
const split = (json: string, cuts: ReadonlyArray<number>): Array<string> => {
  const points = [...new Set(cuts.map((c) => c % (json.length + 1)))].sort((a, b) => a - b)
  return [0, ...points].map((p, i) => json.slice(p, points[i] ?? json.length))
}

const splitJson = fc
  .tuple(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), fc.array(fc.nat(), { maxLength: 5 }))
  .map(([obj, cuts]) => split(Object.keys(obj).length === 0 ? "" : JSON.stringify(obj), cuts))

const callId = fc.hexaString({ minLength: 4, maxLength: 12 }).map((h) => `toolu_${h}`)

const block: fc.Arbitrary<Block> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), pieces: fc.array(text, { maxLength: 5 }) }),
  fc.record({
    kind: fc.constant("thinking" as const),
    pieces: fc.array(text, { maxLength: 4 }),
    signature: fc.base64String({ minLength: 4, maxLength: 40 })
  }),
  fc.record({
    kind: fc.constant("tool" as const),
    id: callId,
    name: fc.constantFrom(...TOOL_NAMES.map(([upstream]) => upstream)),
    pieces: splitJson
  }),
  fc.tuple(callId, text, fc.array(fc.nat(), { maxLength: 5 })).map(([id, input, cuts]) => ({
    kind: "custom" as const,
    id,
    input,
    pieces: split(JSON.stringify({ input }), cuts)
  })),
  fc.record({ kind: fc.constant("redacted" as const), data: fc.base64String({ minLength: 4, maxLength: 40 }) })
)

const delta = (index: number, d: Record<string, unknown>): AnthropicStreamEvent => ({ type: "content_block_delta", index, delta: d })

const blockEvents = (b: Block, index: number): Array<AnthropicStreamEvent> => {
  switch (b.kind) {
    case "text":
      return [
        { type: "content_block_start", index, content_block: { type: "text", text: "" } },
        ...b.pieces.map((t) => delta(index, { type: "text_delta", text: t })),
        { type: "content_block_stop", index }
      ]
    case "thinking":
      return [
        { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } },
        ...b.pieces.map((t) => delta(index, { type: "thinking_delta", thinking: t })),
        delta(index, { type: "signature_delta", signature: b.signature }),
        { type: "content_block_stop", index }
      ]
    case "custom":
      return [
        { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: "apply_patch", input: {} } },
        ...b.pieces.map((p) => delta(index, { type: "input_json_delta", partial_json: p })),
        { type: "content_block_stop", index }
      ]
    case "tool":
      return [
        { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } },
        ...b.pieces.map((p) => delta(index, { type: "input_json_delta", partial_json: p })),
        { type: "content_block_stop", index }
      ]
    case "redacted":
      return [
        { type: "content_block_start", index, content_block: { type: "redacted_thinking", data: b.data } },
        { type: "content_block_stop", index }
      ]
  }
}

const upstreamStream = (blocks: ReadonlyArray<Block>, reason: string, pings: ReadonlyArray<number>): Array<AnthropicStreamEvent> => {
  const events: Array<AnthropicStreamEvent> = [
    {
      type: "message_start",
      message: { id: "msg_x", type: "message", role: "assistant", content: [], usage: { input_tokens: 10, output_tokens: 1 } }
    },
    ...blocks.flatMap(blockEvents),
    { type: "message_delta", delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: 42 } },
    { type: "message_stop" }
  ]
  // Pings may come anywhere, even before message_start.
  for (const p of [...pings].sort((a, b) => b - a)) events.splice(p % (events.length + 1), 0, { type: "ping" })
  return events
}

/** What a client should see for complete streams: text runs merged into one message item. */
const expectedOutput = (blocks: ReadonlyArray<Block>): Array<unknown> => {
  const out: Array<unknown> = []
  for (const b of blocks) {
    const prev = out[out.length - 1] as { type: string; texts: Array<string> } | undefined
    if (b.kind === "text") {
      if (prev?.type === "message") prev.texts.push(b.pieces.join(""))
      else out.push({ type: "message", texts: [b.pieces.join("")] })
    } else if (b.kind === "thinking") out.push({ type: "reasoning", text: b.pieces.join(""), signature: b.signature })
    else if (b.kind === "redacted") out.push({ type: "redacted", data: b.data })
    else if (b.kind === "custom") out.push({ type: "custom_tool_call", call_id: b.id, name: "apply_patch", input: b.input })
    else {
      const client = new Map(TOOL_NAMES).get(b.name)
      out.push({ type: "function_call", call_id: b.id, ...client, arguments: b.pieces.join("") || "{}" })
    }
  }
  return out
}

const observedOutput = (output: ReadonlyArray<Record<string, unknown>>): Array<unknown> =>
  output.map((item) => {
    if (item["type"] === "message") {
      return { type: "message", texts: (item["content"] as Array<{ text: string }>).map((p) => p.text) }
    }
    if (item["type"] === "function_call") {
      const namespace = item["namespace"] === undefined ? {} : { namespace: item["namespace"] }
      return { type: "function_call", call_id: item["call_id"], name: item["name"], ...namespace, arguments: item["arguments"] }
    }
    if (item["type"] === "custom_tool_call") {
      return { type: "custom_tool_call", call_id: item["call_id"], name: item["name"], input: item["input"] }
    }
    const decoded = decodeReasoning(String(item["encrypted_content"]))
    if (decoded?.type === "redacted_thinking") return { type: "redacted", data: decoded.data }
    const summary = item["summary"] as Array<{ text: string }>
    return { type: "reasoning", text: summary[0]?.text, signature: decoded?.signature }
  })

const arbitraryCase = fc.record({
  blocks: fc.array(block, { maxLength: 6 }),
  pings: fc.array(fc.nat(), { maxLength: 3 }),
  ending: fc.oneof(
    fc.record({ kind: fc.constant("stop" as const), reason: fc.constantFrom("end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence") }),
    fc.record({ kind: fc.constant("error" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("cut" as const), at: fc.nat() })
  ) as fc.Arbitrary<Ending>
})

describe("stream translation property", () => {
  it("every generated upstream stream yields a valid Responses stream with the generated content", () => {
    fc.assert(
      fc.property(arbitraryCase, ({ blocks, pings, ending }) => {
        const full = upstreamStream(blocks, ending.kind === "stop" ? ending.reason : "end_turn", pings)
        // Cuts and errors land strictly before message_stop (after it, the response is complete).
        const stopAt = full.findIndex((e) => e.type === "message_stop")
        const upstream = ending.kind === "stop"
          ? full
          : ending.kind === "cut"
          ? full.slice(0, ending.at % (stopAt + 1))
          : [...full.slice(0, ending.at % (stopAt + 1)), { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }]
        const out = runStream(upstream, context(REQUEST))
        expect(checkResponsesStream(out)).toEqual([])
        const response = terminal(out)
        const output = outputOf(response)
        if (ending.kind === "stop") {
          const incomplete = ending.reason === "max_tokens" || ending.reason === "refusal"
          expect(out[out.length - 1]?.type).toBe(incomplete ? "response.incomplete" : "response.completed")
          expect(observedOutput(output)).toEqual(expectedOutput(blocks))
        } else {
          expect(out[out.length - 1]?.type).toBe("response.failed")
          // A failed response never carries a tool call with half-built arguments or input.
          const complete = new Map(
            blocks.flatMap((b) => (b.kind === "tool" ? [[b.id, b.pieces.join("") || "{}"]] : b.kind === "custom" ? [[b.id, b.input]] : []))
          )
          for (const item of output.filter((i) => i["type"] === "function_call" || i["type"] === "custom_tool_call")) {
            expect(item["arguments"] ?? item["input"]).toBe(complete.get(String(item["call_id"])))
          }
        }
      }),
      { numRuns: 400 }
    )
  })
})
