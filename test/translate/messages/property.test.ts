/**
 * Properties: (a) any well-formed Messages request translates, keeping its text, tool calls and
 * tool results in count and order; (b) any Responses stream (text, calls and reasoning in any
 * order, split anywhere, complete, cut, failed) translates to events that obey the Anthropic
 * stream grammar, which the Anthropic SDK accumulates into exactly the content that was generated.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { messagesToResponses } from "../../../src/translate/messages/request.js"
import { encodeThinkingSignature } from "../../../src/translate/messages/signature.js"
import { type Ending, type Ev, grammarViolations, type OutItem, responsesStream, sdkAccumulate, translate } from "./helpers.js"

// ---------------------------------------------------------------------------------------------
// (a) requests
// ---------------------------------------------------------------------------------------------

const nonEmpty = fc.string({ minLength: 1, maxLength: 20 })
const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/)
const textBlock = nonEmpty.map((text) => ({ type: "text", text, cache_control: { type: "ephemeral" } }))
const toolResult = fc.record({
  type: fc.constant("tool_result"),
  tool_use_id: id,
  content: fc.oneof(fc.string(), fc.array(textBlock, { maxLength: 2 })),
  is_error: fc.boolean()
})
const image = fc.constant({ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } })
const toolUse = fc.record({
  type: fc.constant("tool_use"),
  id,
  name: fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,10}$/),
  input: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
})
const thinking = fc.oneof(
  fc.record({ type: fc.constant("thinking"), thinking: fc.string(), signature: fc.base64String({ maxLength: 40 }) }),
  fc.tuple(id, nonEmpty).map(([i, e]) => ({ type: "thinking", thinking: "", signature: encodeThinkingSignature({ id: `rs_${i}`, encrypted_content: e }) })),
  fc.record({ type: fc.constant("redacted_thinking"), data: fc.base64String({ maxLength: 20 }) })
)

const userMessage = fc.oneof(
  nonEmpty.map((content) => ({ role: "user", content })),
  fc.array(fc.oneof(textBlock, toolResult, image), { minLength: 1, maxLength: 5 }).map((content) => ({ role: "user", content }))
)
const assistantMessage = fc.array(fc.oneof(textBlock, toolUse, thinking), { minLength: 1, maxLength: 5 }).map((content) => ({ role: "assistant", content }))

const request = fc.record({
  model: fc.constant("gpt-5.4"),
  max_tokens: fc.integer({ min: 1, max: 64000 }),
  stream: fc.boolean(),
  system: fc.oneof(fc.string(), fc.array(textBlock, { maxLength: 3 })),
  messages: fc.array(fc.oneof(userMessage, assistantMessage), { minLength: 1, maxLength: 6 }),
  thinking: fc.oneof(fc.constant({ type: "adaptive" }), fc.constant({ type: "disabled" }), fc.integer({ min: 1024, max: 64000 }).map((b) => ({ type: "enabled", budget_tokens: b })))
})

type Block = Record<string, unknown>

/** What must come out, in order: user turns put their tool results first. */
const expectedTrace = (messages: ReadonlyArray<{ role: string; content: unknown }>): Array<string> =>
  messages.flatMap((m) => {
    const blocks: ReadonlyArray<Block> = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Array<Block>)
    const trace = (b: Block): Array<string> =>
      b["type"] === "text" ? [`text:${String(b["text"])}`] : b["type"] === "tool_use" ? [`use:${String(b["id"])}`] : b["type"] === "tool_result" ? [`result:${String(b["tool_use_id"])}`] : []
    if (m.role === "assistant") return blocks.flatMap(trace)
    return [...blocks.filter((b) => b["type"] === "tool_result").flatMap(trace), ...blocks.filter((b) => b["type"] !== "tool_result").flatMap(trace)]
  })

const actualTrace = (input: ReadonlyArray<Block>): Array<string> =>
  input.flatMap((item) => {
    if (item["type"] === "function_call") return [`use:${String(item["call_id"])}`]
    if (item["type"] === "function_call_output") return [`result:${String(item["call_id"])}`]
    if (item["type"] === "message") {
      return (item["content"] as Array<Block>).flatMap((p) => (p["type"] === "input_text" || p["type"] === "output_text" ? [`text:${String(p["text"])}`] : []))
    }
    return []
  })

describe("messagesToResponses on arbitrary well-formed requests", () => {
  it("succeeds and keeps text, tool_use and tool_result in count and order", () => {
    fc.assert(fc.property(request, (body) => {
      const r = messagesToResponses(body)
      if (Result.isFailure(r)) throw new Error(`${r.failure.message} at ${String(r.failure.param)}`)
      const input = r.success["input"] as Array<Block>
      expect(actualTrace(input)).toEqual(expectedTrace(body.messages))
      // Each replayed reasoning item is ours and leads to an item of its own turn.
      input.forEach((item, i) => {
        if (item["type"] !== "reasoning") return
        expect(String(item["id"]).startsWith("rs_")).toBe(true)
        const next = input[i + 1]
        expect(next?.["type"] === "reasoning" || next?.["type"] === "function_call" || next?.["role"] === "assistant").toBe(true)
      })
    }), { numRuns: 300 })
  })
})

// ---------------------------------------------------------------------------------------------
// (b) streams
// ---------------------------------------------------------------------------------------------

const piece = fc.oneof(fc.string({ maxLength: 8 }), fc.unicodeString({ maxLength: 4 }))

/** A JSON object's text cut at arbitrary points, as argument deltas arrive. */
const splitArgs = fc
  .tuple(fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), fc.array(fc.nat(), { maxLength: 4 }))
  .map(([obj, cuts]) => {
    const json = Object.keys(obj).length === 0 ? "" : JSON.stringify(obj)
    const points = [...new Set(cuts.map((c) => c % (json.length + 1)))].sort((a, b) => a - b)
    return [0, ...points].map((p, i) => json.slice(p, points[i] ?? json.length)).filter((s) => s !== "")
  })

const outItem: fc.Arbitrary<OutItem> = fc.oneof(
  fc.record({ kind: fc.constant("message" as const), parts: fc.array(fc.array(piece, { maxLength: 4 }), { minLength: 1, maxLength: 2 }) }),
  fc.record(
    {
      kind: fc.constant("reasoning" as const),
      id: id.map((i) => `rs_${i}`),
      summary: fc.array(fc.array(piece, { maxLength: 3 }), { maxLength: 3 }),
      encrypted: fc.base64String({ minLength: 4, maxLength: 40 })
    },
    { requiredKeys: ["kind", "id", "summary"] }
  ),
  fc.record({ kind: fc.constant("call" as const), id: id.map((i) => `fc_${i}`), callId: id.map((i) => `call_${i}`), name: fc.stringMatching(/^[A-Za-z_]{1,10}$/), pieces: splitArgs })
)

const ending: fc.Arbitrary<Ending> = fc.oneof(
  fc.constant({ kind: "completed" as const }),
  fc.constantFrom("max_output_tokens" as const, "content_filter" as const).map((reason) => ({ kind: "incomplete" as const, reason })),
  fc.constant({ kind: "failed" as const, code: "server_error", message: "boom" }),
  fc.constant({ kind: "error" as const, code: "rate_limit_exceeded", message: "slow down" }),
  fc.constant({ kind: "cut" as const })
)

const joinedParts = (parts: ReadonlyArray<ReadonlyArray<string>>): Array<string> => parts.map((p) => p.join("")).filter((t) => t !== "")

const expectedContent = (items: ReadonlyArray<OutItem>): Array<Record<string, unknown>> =>
  items.flatMap((item): Array<Record<string, unknown>> => {
    if (item.kind === "message") return joinedParts(item.parts).map((text) => ({ type: "text", text }))
    if (item.kind === "reasoning") {
      const thinking = joinedParts(item.summary).join("\n\n")
      if (thinking === "" && item.encrypted === undefined) return []
      const signature = item.encrypted === undefined ? "" : encodeThinkingSignature({ id: item.id, encrypted_content: item.encrypted })
      return [{ type: "thinking", thinking, signature }]
    }
    const args = item.pieces.join("")
    return [{ type: "tool_use", id: item.callId, name: item.name, input: args === "" ? {} : JSON.parse(args) }]
  })

/** Keepalives sprinkled at arbitrary points, and the stream cut at one when the ending is a cut. */
const scenario = fc.record({
  items: fc.array(outItem, { maxLength: 6 }),
  ending,
  keepalives: fc.array(fc.nat(), { maxLength: 3 }),
  cutAt: fc.nat()
})

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed", "error"])

describe("MessagesStreamTranslator on arbitrary Responses streams", () => {
  it("the grammar catches what it should", () => {
    const start = { type: "message_start", message: {} }
    const stop = [{ type: "message_delta", delta: {}, usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } }, { type: "message_stop" }]
    expect(grammarViolations([start, ...stop])).toEqual([])
    expect(grammarViolations([start, { type: "content_block_start", index: 1, content_block: { type: "text" } }, { type: "content_block_stop", index: 1 }, ...stop])).not.toEqual([])
    expect(grammarViolations([start, { type: "content_block_start", index: 0, content_block: { type: "text" } }, ...stop])).not.toEqual([])
    expect(grammarViolations([start, { type: "content_block_start", index: 0, content_block: { type: "text" } }, { type: "content_block_delta", index: 0, delta: { type: "thinking_delta" } }, { type: "content_block_stop", index: 0 }, ...stop])).not.toEqual([])
    expect(grammarViolations([start])).not.toEqual([])
    expect(grammarViolations([...stop])).not.toEqual([])
    expect(grammarViolations([start, { type: "error", error: {} }, { type: "ping" }])).not.toEqual([])
  })

  it("obey the grammar, and the SDK gets exactly the generated content", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ items, ending, keepalives, cutAt }) => {
        let events: Array<Ev> = responsesStream(items, ending)
        if (ending.kind === "cut") events = events.slice(0, cutAt % (events.length + 1))
        for (const k of keepalives) events.splice(k % (events.length + 1), 0, { type: "keepalive" })
        // A keepalive after the terminal event would be after the end: keep the terminal last.
        const terminal = events.findIndex((e) => TERMINAL.has(String(e["type"])))
        if (terminal >= 0) events = [...events.slice(0, terminal).concat(events.slice(terminal + 1)), events[terminal]!]

        const { out } = translate(events)
        expect(grammarViolations(out)).toEqual([])
        const result = await sdkAccumulate(out)
        if (ending.kind === "completed" || ending.kind === "incomplete") {
          if ("error" in result) throw result.error
          expect(result.message.content).toEqual(expectedContent(items))
          const called = items.some((i) => i.kind === "call")
          expect(result.message.stop_reason).toBe(
            ending.kind === "incomplete" ? (ending.reason === "content_filter" ? "refusal" : "max_tokens") : called ? "tool_use" : "end_turn"
          )
        } else {
          expect(out.at(-1)?.type).toBe("error")
          expect("error" in result).toBe(true)
        }
      }),
      { numRuns: 200 }
    )
  })
})
