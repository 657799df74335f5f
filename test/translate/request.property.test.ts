/**
 * Property: whatever order of messages, calls, outputs, developer notes and reasoning a client
 * sends, the Anthropic request obeys Anthropic's turn rules and keeps every user text.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { encodeReasoning, responsesToMessages } from "../../src/translate/index.js"

const callIds = fc.constantFrom("call_a", "call_b", "call_c", "call.d")
const word = fc.stringMatching(/^[a-z]{1,8}$/)

const item = fc.oneof(
  word.map((text) => ({ role: "user", content: [{ type: "input_text", text }] })),
  word.map((text) => ({ type: "message", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] })),
  word.map((text) => ({ role: "developer", content: text })),
  callIds.map((call_id) => ({ type: "function_call", call_id, name: "f", arguments: "{}" })),
  fc.tuple(callIds, word).map(([call_id, output]) => ({ type: "function_call_output", call_id, output })),
  word.map((thinking) => ({ type: "reasoning", summary: [], encrypted_content: encodeReasoning({ type: "thinking", thinking, signature: "sig" }) }))
)

describe("request translation property", () => {
  it("any history yields alternating turns, paired tool calls first in the next turn, and every user text", () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 14 }), (input) => {
        const result = responsesToMessages({ model: "m", input, tools: [{ type: "function", name: "f" }] }, { upstreamModel: "claude-sonnet-4-5" })
        expect(Result.isSuccess(result)).toBe(true)
        if (Result.isFailure(result)) return
        const messages = result.success.messages
        expect(messages[0]?.role).toBe("user")
        messages.forEach((m, i) => {
          expect(m.content.length).toBeGreaterThan(0)
          if (i > 0) expect(m.role).not.toBe(messages[i - 1]?.role)
          for (const b of m.content) if (b.type === "text") expect(b.text).not.toBe("")
          const uses = m.role === "assistant" ? m.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : []
          if (uses.length > 0) {
            // Answered in the very next turn, results first, in call order.
            const next = messages[i + 1]
            const leading = (next?.content ?? []).slice(0, uses.length).map((b) => (b.type === "tool_result" ? b.tool_use_id : undefined))
            expect(leading).toEqual(uses)
          }
          if (m.role === "user") {
            const prev = messages[i - 1]
            const prevUses = prev?.role === "assistant" ? prev.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : []
            for (const b of m.content) if (b.type === "tool_result") expect(prevUses).toContain(b.tool_use_id)
          }
        })
        const userTexts = (input as ReadonlyArray<Record<string, unknown>>).flatMap((i) =>
          i["role"] === "user" ? (i["content"] as Array<{ text: string }>).map((p) => p.text) : []
        )
        const sentTexts = messages.flatMap((m) =>
          m.role === "user" ? m.content.flatMap((b) => (b.type === "text" && b.text !== "Continue." ? [b.text] : [])) : []
        )
        expect(sentTexts).toEqual(userTexts)
      }),
      { numRuns: 500 }
    )
  })
})
