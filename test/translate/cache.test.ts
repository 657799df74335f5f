/**
 * src/translate/cache.ts: the prompt-cache breakpoints of a translated request. Anthropic reads its
 * cache for a prefix (tools, system, messages) that an earlier request marked and sent identically;
 * these tests check the marks are where an agent loop's next request finds them, and within
 * Anthropic's rules (at most 4, none on thinking or empty text).
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { encodeReasoning, type MessagesRequest, responsesToMessages } from "../../src/translate/index.js"

const translate = (body: Record<string, unknown>): MessagesRequest =>
  Result.getOrThrow(responsesToMessages({ model: "claude-sonnet-4-5", ...body }, { upstreamModel: "claude-sonnet-4-5-20250929" }))

type Marked = { readonly cache_control?: unknown; readonly type?: string; readonly text?: string }

/** Every marked place: `tools[i]`, `system[i]`, `messages[i][j]`. */
const marks = (req: MessagesRequest): Array<string> => {
  const out: Array<string> = []
  const scan = (items: ReadonlyArray<Marked> | undefined, at: (i: number) => string) =>
    items?.forEach((b, i) => {
      if (b.cache_control !== undefined) out.push(at(i))
    })
  scan(req.tools, (i) => `tools[${i}]`)
  scan(req.system, (i) => `system[${i}]`)
  req.messages.forEach((m, i) => scan(m.content, (j) => `messages[${i}][${j}]`))
  return out
}

/** What Anthropic caches, in its order: tools, system, then the first `count` messages. */
const prefix = (req: MessagesRequest, count = req.messages.length) =>
  JSON.stringify({ tools: req.tools ?? [], system: req.system ?? [], messages: req.messages.slice(0, count) })

const unmarked = (json: string) => json.replaceAll(/,"cache_control":\{"type":"ephemeral"\}/g, "")

const TOOLS = [
  { type: "function", name: "exec_command", description: "Run a command", parameters: { type: "object", properties: { cmd: { type: "string" } } } },
  { type: "custom", name: "apply_patch", description: "Edit files" },
  { type: "web_search" }
]
const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] })
const call = (call_id: string, cmd: string) => ({ type: "function_call", call_id, name: "exec_command", arguments: JSON.stringify({ cmd }) })
const output = (call_id: string, out: string) => ({ type: "function_call_output", call_id, output: out })
const thinking = (text: string) => ({ type: "reasoning", summary: [], encrypted_content: encodeReasoning({ type: "thinking", thinking: text, signature: "sig" }) })

/** Three requests of one Codex session: a prompt, a tool round, then the answer and a follow-up. */
const base = { instructions: "You are Codex.", tools: TOOLS, reasoning: { effort: "medium" }, stream: true }
const input1 = [{ role: "developer", content: "Sandbox: workspace-write." }, user("Why does the build fail?")]
const input2 = [...input1, thinking("Run the build."), call("call_1", "npm run build"), output("call_1", "error TS2304")]
const input3 = [
  ...input2,
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "A missing import." }] },
  user("Fix it.")
]
const turn1 = translate({ ...base, input: input1 })
const turn2 = translate({ ...base, input: input2 })
const turn3 = translate({ ...base, input: input3 })

describe("prompt-cache breakpoints", () => {
  it("mark the last tool, the last system block and the latest message's last block", () => {
    expect(marks(turn1)).toEqual(["tools[1]", "system[1]", "messages[0][0]"])
  })

  it("also mark the previous turn's latest message, never more than 4 in all", () => {
    // messages: user, assistant [thinking, tool_use], user [tool_result]
    expect(marks(turn2)).toEqual(["tools[1]", "system[1]", "messages[0][0]", "messages[2][0]"])
    // ..., assistant text, user [text]: the tool_result turn was the previous request's latest.
    expect(turn3.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"])
    expect(marks(turn3)).toEqual(["tools[1]", "system[1]", "messages[2][0]", "messages[4][0]"])
  })

  it("turn 2 repeats turn 1's whole marked prefix byte for byte: Anthropic reads it from the cache", () => {
    expect(prefix(turn2, turn1.messages.length)).toBe(prefix(turn1))
  })

  it("each later turn repeats the previous prefix, with a mark where the previous turn's last one was", () => {
    expect(unmarked(prefix(turn3, turn2.messages.length))).toBe(unmarked(prefix(turn2)))
    expect(marks(turn3)).toContain(marks(turn2).at(-1))
    // The system and tools part, marked alike on every turn.
    expect(JSON.stringify([turn3.tools, turn3.system])).toBe(JSON.stringify([turn1.tools, turn1.system]))
  })

  it("skip thinking blocks: an assistant prefill ending in thinking is marked on its text", () => {
    const req = translate({
      input: [user("Go on."), thinking("Plan."), { role: "assistant", content: [{ type: "output_text", text: "Partial" }] }]
    })
    expect(req.messages[1]?.content.map((b) => b.type)).toEqual(["thinking", "text"])
    expect(marks(req)).toEqual(["messages[0][0]", "messages[1][1]"])
  })

  it("a request without tools or instructions marks its message only", () => {
    expect(marks(translate({ input: "Hello" }))).toEqual(["messages[0][0]"])
    expect(marks(translate({ input: [{ role: "developer", content: "Only a developer prompt." }] }))).toEqual(["system[0]", "messages[0][0]"])
  })

  it("the client's request is not changed, and the marked body is plain JSON", () => {
    const body = { ...base, input: input2 }
    const before = JSON.stringify(body)
    const req = translate(body)
    expect(JSON.stringify(body)).toBe(before)
    expect(JSON.parse(JSON.stringify(req))).toEqual(req)
  })
})

// ---------------------------------------------------------------------------------------------
// Properties

const word = fc.stringMatching(/^[a-z]{1,8}$/)
const callIds = fc.constantFrom("call_a", "call_b", "call_c")
const anyItem = fc.oneof(
  word.map((text) => user(text)),
  word.map((text) => ({ type: "message", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] })),
  word.map((text) => ({ role: "developer", content: text })),
  fc.constant({ role: "user", content: [{ type: "input_text", text: "   " }] }),
  callIds.map((id) => call(id, "ls")),
  fc.tuple(callIds, word).map(([id, out]) => output(id, out)),
  word.map((text) => thinking(text)),
  fc.constant({ type: "reasoning", summary: [], encrypted_content: encodeReasoning({ type: "redacted_thinking", data: "EmwK" }) })
)

/** One step of an agent loop: a reply and a new prompt, or a round of tool calls and their outputs. */
const step = fc.oneof(
  fc.record({ kind: fc.constant("chat" as const), reply: word, next: word }),
  fc.record({ kind: fc.constant("tools" as const), think: fc.option(word, { nil: undefined }), outputs: fc.array(word, { minLength: 1, maxLength: 3 }) })
)

describe("prompt-cache breakpoint properties", () => {
  it("any history: at most 4 marks, none on thinking or blank text, always the latest message", () => {
    fc.assert(
      fc.property(fc.array(anyItem, { maxLength: 14 }), fc.nat(3), fc.boolean(), (input, toolCount, withInstructions) => {
        const tools = Array.from({ length: toolCount }, (_, i) => ({ type: "function", name: `f${i}` }))
        const req = translate({ input, tools, ...(withInstructions ? { instructions: "Be brief." } : {}) })
        const found = marks(req)
        expect(found.length).toBeLessThanOrEqual(4)
        for (const m of req.messages) {
          for (const b of m.content as ReadonlyArray<Marked>) {
            if (b.cache_control === undefined) continue
            expect(b.type).not.toBe("thinking")
            expect(b.type).not.toBe("redacted_thinking")
            if (b.type === "text") expect(b.text?.trim()).not.toBe("")
          }
        }
        const latest = req.messages.length - 1
        const markable = (req.messages[latest]?.content ?? []).some((b) =>
          b.type === "text" ? b.text.trim() !== "" : b.type !== "thinking" && b.type !== "redacted_thinking"
        )
        expect(found.some((at) => at.startsWith(`messages[${latest}]`))).toBe(markable)
        if (toolCount > 0) expect(found).toContain(`tools[${toolCount - 1}]`)
        const systemCount = req.system?.length ?? 0
        if (systemCount > 0) expect(found).toContain(`system[${systemCount - 1}]`)
      }),
      { numRuns: 400 }
    )
  })

  it("an agent loop: every request repeats the previous one's prefix and marks where it ended", () => {
    fc.assert(
      fc.property(word, fc.array(step, { minLength: 1, maxLength: 8 }), (first, steps) => {
        const inputs: Array<Array<Record<string, unknown>>> = [[user(first)]]
        steps.forEach((s, i) => {
          const last = inputs[inputs.length - 1] ?? []
          const added = s.kind === "chat"
            ? [{ type: "message", role: "assistant", content: [{ type: "output_text", text: s.reply }] }, user(s.next)]
            : [
              ...(s.think === undefined ? [] : [thinking(s.think)]),
              ...s.outputs.map((_, j) => call(`call_${i}_${j}`, "ls")),
              ...s.outputs.map((out, j) => output(`call_${i}_${j}`, out))
            ]
          inputs.push([...last, ...added])
        })
        const requests = inputs.map((input) => translate({ ...base, input }))
        requests.forEach((req, i) => {
          expect(marks(req).length).toBeLessThanOrEqual(4)
          const previous = requests[i - 1]
          if (previous === undefined) return
          expect(unmarked(prefix(req, previous.messages.length))).toBe(unmarked(prefix(previous)))
          // The previous request's last mark, at the same place here: its cache entry is read.
          expect(marks(req)).toContain(marks(previous).at(-1))
        })
        // The second request repeats the first byte for byte, marks included.
        const [one, two] = requests
        if (one !== undefined && two !== undefined) expect(prefix(two, one.messages.length)).toBe(prefix(one))
      }),
      { numRuns: 300 }
    )
  })
})
