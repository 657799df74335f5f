/**
 * src/services/scheduler/session.ts: which requests count as one conversation.
 */
import { describe, expect, it } from "vitest"
import { sessionOf } from "../../src/services/scheduler/session.js"

const turn1 = {
  model: "gpt-5.4",
  instructions: "You are a coding agent.",
  input: [
    { role: "developer", content: "Work in /repo." },
    { role: "user", content: [{ type: "input_text", text: "Fix the failing test." }] }
  ]
}

const turn2 = {
  ...turn1,
  input: [
    ...turn1.input,
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "Done." }] },
    { role: "user", content: "Now add a changelog entry." }
  ]
}

describe("sessionOf", () => {
  it("an explicit header wins, in the order session_id, session-id, conversation_id, conversation-id", () => {
    const a = sessionOf("key-1", { session_id: "abc" }, turn1)
    expect(a).toBeDefined()
    expect(sessionOf("key-1", { session_id: "abc" }, { input: "something else entirely" })).toBe(a)
    expect(sessionOf("key-1", { "session-id": "abc" }, {})).toBe(a)
    expect(sessionOf("key-1", { conversation_id: "abc" }, {})).toBe(a)
    expect(sessionOf("key-1", { "conversation-id": "abc" }, {})).toBe(a)
    expect(sessionOf("key-1", { session_id: "abc", conversation_id: "zzz" }, {})).toBe(a)
    expect(sessionOf("key-1", { session_id: "abd" }, {})).not.toBe(a)
  })

  it("blank headers are ignored", () => {
    expect(sessionOf("key-1", { session_id: "  " }, {})).toBeUndefined()
  })

  it("then prompt_cache_key, which outranks the prompt", () => {
    const a = sessionOf("key-1", {}, { ...turn1, prompt_cache_key: "pck-1" })
    expect(sessionOf("key-1", {}, { input: "other", prompt_cache_key: "pck-1" })).toBe(a)
    expect(a).not.toBe(sessionOf("key-1", {}, turn1))
    // A header and a cache key with the same text are different sources.
    expect(sessionOf("key-1", { session_id: "pck-1" }, {})).not.toBe(a)
  })

  it("else the stable prompt prefix: later turns keep the session, a new first message starts another", () => {
    const first = sessionOf("key-1", {}, turn1)
    expect(first).toBeDefined()
    expect(sessionOf("key-1", {}, turn2)).toBe(first)
    const other = { ...turn1, input: [turn1.input[0], { role: "user", content: "A different task." }] }
    expect(sessionOf("key-1", {}, other)).not.toBe(first)
    expect(sessionOf("key-1", {}, { ...turn1, instructions: "Other instructions." })).not.toBe(first)
  })

  it("a string input is its own prefix", () => {
    expect(sessionOf("key-1", {}, { input: "hello" })).toBe(sessionOf("key-1", {}, { input: "hello", stream: true }))
    expect(sessionOf("key-1", {}, { input: "hello" })).not.toBe(sessionOf("key-1", {}, { input: "hello!" }))
  })

  it("nothing to go on: no session", () => {
    expect(sessionOf("key-1", {}, { model: "gpt-5.4" })).toBeUndefined()
    expect(sessionOf("key-1", {}, { input: "" })).toBeUndefined()
    expect(sessionOf("key-1", {}, { input: [{ type: "function_call_output", call_id: "c", output: "x" }] })).toBeUndefined()
  })

  it("scoped by key: two tenants with the same session id or prompt never share a binding", () => {
    expect(sessionOf("key-1", { session_id: "abc" }, {})).not.toBe(sessionOf("key-2", { session_id: "abc" }, {}))
    expect(sessionOf("key-1", {}, turn1)).not.toBe(sessionOf("key-2", {}, turn1))
  })

  it("is short and carries no client text", () => {
    const id = sessionOf("key-1", { session_id: "a-very-long-session-identifier-".repeat(20) }, {})
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/)
  })
})
