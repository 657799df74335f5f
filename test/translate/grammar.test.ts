/**
 * The grammar checker must catch what breaks real clients; each case breaks one rule in an
 * otherwise valid stream and expects that rule's violation.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ResponsesStreamEvent } from "../../src/translate/index.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { TEXT_ONLY, THINKING_TOOL } from "./fixtures.js"
import { runStream } from "./helpers.js"

type Events = Array<ResponsesStreamEvent>

const renumber = (events: Events): Events => events.map((e, i) => ({ ...e, sequence_number: i }))
const without = (events: Events, type: string): Events => renumber(events.filter((e) => e.type !== type))
const patchTerminal = (events: Events, patch: (r: Record<string, unknown>) => Record<string, unknown>): Events =>
  events.map((e, i) => (i === events.length - 1 ? { ...e, response: patch(e["response"] as Record<string, unknown>) } : e))

const violations = (events: Events): string => checkResponsesStream(events).join("\n")

describe("checkResponsesStream", () => {
  const valid = runStream(THINKING_TOOL)
  const text = runStream(TEXT_ONLY)

  it("accepts a valid translated stream", () => {
    expect(checkResponsesStream(valid)).toEqual([])
  })

  it("requires response.created first", () => {
    expect(violations(without(text, "response.created"))).toMatch(/first event must be response.created/)
  })

  it("requires sequence numbers 0..n", () => {
    expect(violations(text.map((e) => ({ ...e, sequence_number: e.sequence_number + 1 })))).toMatch(/sequence_number 1, expected 0/)
  })

  it("requires content_part.added before text deltas", () => {
    expect(violations(without(text, "response.content_part.added"))).toMatch(/content_index 0 was never added/)
  })

  it("requires output_item.added before item events", () => {
    expect(violations(without(text, "response.output_item.added"))).toMatch(/never added/)
  })

  it("requires item_id to equal the item's id", () => {
    const broken = text.map((e) => (e.type === "response.output_text.delta" ? { ...e, item_id: "msg_other" } : e))
    expect(violations(broken)).toMatch(/item_id msg_other does not match/)
  })

  it("requires done text to equal the concatenated deltas", () => {
    const firstDelta = text.findIndex((e) => e.type === "response.output_text.delta")
    expect(violations(renumber(text.filter((_, i) => i !== firstDelta)))).toMatch(/differs from the deltas/)
  })

  it("rejects empty deltas", () => {
    const broken = text.map((e) => (e.type === "response.output_text.delta" ? { ...e, delta: "" } : e))
    expect(violations(broken)).toMatch(/non-empty string/)
  })

  it("requires the terminal output to hold every done item", () => {
    expect(violations(patchTerminal(valid, (r) => ({ ...r, output: [] })))).toMatch(/differs from the output_item.done items/)
  })

  it("requires every added item to be done before completed", () => {
    expect(violations(without(valid, "response.output_item.done"))).toMatch(/never done/)
  })

  it("requires Codex-parsable usage", () => {
    const broken = patchTerminal(text, (r) => ({ ...r, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, input_tokens_details: {} } }))
    const found = violations(broken)
    expect(found).toMatch(/cached_tokens/)
    expect(found).toMatch(/reasoning_tokens/)
  })

  it("rejects unknown event types", () => {
    const broken = renumber([...text.slice(0, 2), { type: "response.thinking", sequence_number: 0 }, ...text.slice(2)])
    expect(violations(broken)).toMatch(/unknown event type/)
  })

  it("requires exactly one terminal event, last", () => {
    expect(violations(renumber([...text, text[text.length - 1] as ResponsesStreamEvent]))).toMatch(/after the terminal/)
    expect(violations(text.slice(0, -1))).toMatch(/no terminal event/)
  })

  it("requires a stable response id", () => {
    expect(violations(patchTerminal(text, (r) => ({ ...r, id: "resp_other" })))).toMatch(/response.id changed/)
  })

  it("requires output_index in order", () => {
    const broken = valid.map((e) => (e.type === "response.output_item.added" && e["output_index"] === 1 ? { ...e, output_index: 2 } : e))
    expect(violations(broken)).toMatch(/output_index 2, expected 1/)
  })

  it("requires a lone error event to be followed by response.failed", () => {
    const broken = renumber([...text.slice(0, 3), { type: "error", sequence_number: 0, code: "x", message: "y" }, ...text.slice(3)])
    expect(violations(broken)).toMatch(/followed by response.failed/)
  })
})
