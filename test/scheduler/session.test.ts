/**
 * src/services/scheduler/session.ts: which requests count as one conversation.
 */
import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { promptCacheKeyFor, sessionOf } from "../../src/domain/session.js"

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

  it("Claude Code's x-claude-code-session-id header is a session header, after the others", () => {
    const a = sessionOf("key-1", { "x-claude-code-session-id": SESSION }, messagesTurn1)
    expect(a).toBeDefined()
    expect(sessionOf("key-1", { "x-claude-code-session-id": SESSION }, {})).toBe(a)
    expect(sessionOf("key-1", { "x-claude-code-session-id": OTHER_SESSION }, messagesTurn1)).not.toBe(a)
    expect(sessionOf("key-1", { session_id: "abc", "x-claude-code-session-id": SESSION }, {}))
      .toBe(sessionOf("key-1", { session_id: "abc" }, {}))
  })
})

const SESSION = "0b0a5c1e-7d52-4c47-9d43-3a4e2f6a9b10"
const OTHER_SESSION = "4f1c2d9e-1111-4a2b-8c3d-5e6f7a8b9c0d"
const DEVICE = "a".repeat(64)
const jsonUserId = (session: string) => JSON.stringify({ device_id: DEVICE, account_uuid: "", session_id: session })
const legacyUserId = (session: string) => `user_${"b".repeat(64)}_account_9d0e1f2a-3b4c-4d5e-8f60-718293a4b5c6_session_${session}`

/** Two turns of a Claude Code session: the client moves its message breakpoint to the latest message. */
const messagesTurn1 = {
  model: "claude-sonnet-4-5",
  max_tokens: 32000,
  system: [
    { type: "text", text: "You are Claude Code." },
    { type: "text", text: "Be careful.", cache_control: { type: "ephemeral" } }
  ],
  messages: [{
    role: "user",
    content: [
      { type: "text", text: "<system-reminder>cwd: /repo</system-reminder>" },
      { type: "text", text: "Fix the failing test.", cache_control: { type: "ephemeral" } }
    ]
  }]
}
const messagesTurn2 = {
  ...messagesTurn1,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "<system-reminder>cwd: /repo</system-reminder>" },
        { type: "text", text: "Fix the failing test." }
      ]
    },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo hi" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hi", cache_control: { type: "ephemeral" } }] }
  ]
}

describe("sessionOf: Messages bodies (Claude Code)", () => {
  it("metadata.user_id as a JSON string names the session", () => {
    const a = sessionOf("key-1", {}, { ...messagesTurn1, metadata: { user_id: jsonUserId(SESSION) } })
    expect(a).toBeDefined()
    expect(sessionOf("key-1", {}, { ...messagesTurn2, metadata: { user_id: jsonUserId(SESSION) } })).toBe(a)
    expect(sessionOf("key-1", {}, { messages: [], metadata: { user_id: jsonUserId(SESSION) } })).toBe(a)
    expect(sessionOf("key-1", {}, { ...messagesTurn1, metadata: { user_id: jsonUserId(OTHER_SESSION) } })).not.toBe(a)
    // Not the prompt: the same prompt in another session is another session.
    expect(a).not.toBe(sessionOf("key-1", {}, messagesTurn1))
  })

  it("the older user_<hash>_account_<uuid>_session_<uuid> form names the same session", () => {
    const json = sessionOf("key-1", {}, { metadata: { user_id: jsonUserId(SESSION) } })
    expect(sessionOf("key-1", {}, { metadata: { user_id: legacyUserId(SESSION) } })).toBe(json)
    expect(sessionOf("key-1", {}, { metadata: { user_id: `user_${"b".repeat(64)}_account__session_${SESSION}` } })).toBe(json)
    expect(sessionOf("key-1", {}, { metadata: { user_id: legacyUserId(OTHER_SESSION) } })).not.toBe(json)
  })

  it("the header and metadata.user_id carry the same uuid and give the same id; the header wins when they differ", () => {
    const viaHeader = sessionOf("key-1", { "x-claude-code-session-id": SESSION }, messagesTurn1)
    expect(sessionOf("key-1", {}, { ...messagesTurn1, metadata: { user_id: jsonUserId(SESSION) } })).toBe(viaHeader)
    expect(sessionOf("key-1", { "x-claude-code-session-id": SESSION }, { metadata: { user_id: jsonUserId(OTHER_SESSION) } }))
      .toBe(viaHeader)
  })

  it("metadata.user_id outranks prompt_cache_key, which outranks the prompt", () => {
    const viaMetadata = sessionOf("key-1", {}, { metadata: { user_id: jsonUserId(SESSION) } })
    expect(sessionOf("key-1", {}, { ...messagesTurn1, prompt_cache_key: "pck", metadata: { user_id: jsonUserId(SESSION) } }))
      .toBe(viaMetadata)
    expect(sessionOf("key-1", {}, { ...messagesTurn1, prompt_cache_key: "pck" })).toBe(sessionOf("key-1", {}, { prompt_cache_key: "pck" }))
  })

  it("a user_id that names no session is ignored: the next signal decides", () => {
    const byPrompt = sessionOf("key-1", {}, messagesTurn1)
    const garbage: ReadonlyArray<unknown> = [
      "alice",
      "",
      "   ",
      "{not json",
      "{}",
      JSON.stringify({ device_id: DEVICE, account_uuid: "" }),
      JSON.stringify({ session_id: "" }),
      JSON.stringify({ session_id: 42 }),
      JSON.stringify({ session_id: "x".repeat(300) }),
      JSON.stringify(["session_id", SESSION]),
      "user_abc_account_def",
      `user_abc_account_def_session_`,
      `user_abc_account_def_session_${SESSION} trailing`,
      `prefix_user_abc_account_def_session_${SESSION}x!`,
      42,
      null,
      { session_id: SESSION }
    ]
    for (const user_id of garbage) {
      expect(sessionOf("key-1", {}, { ...messagesTurn1, metadata: { user_id } })).toBe(byPrompt)
    }
    expect(sessionOf("key-1", {}, { ...messagesTurn1, metadata: "user" })).toBe(byPrompt)
    expect(sessionOf("key-1", {}, { ...messagesTurn1, metadata: null })).toBe(byPrompt)
  })

  it("without any signal, system and the first user message hash alike on every turn, breakpoints aside", () => {
    const first = sessionOf("key-1", {}, messagesTurn1)
    expect(first).toBeDefined()
    expect(sessionOf("key-1", {}, messagesTurn2)).toBe(first)
    expect(sessionOf("key-1", {}, { ...messagesTurn1, system: [{ type: "text", text: "Other." }] })).not.toBe(first)
    const otherTask = { ...messagesTurn1, messages: [{ role: "user", content: "Write the docs." }] }
    expect(sessionOf("key-1", {}, otherTask)).not.toBe(first)
  })

  it("system as a string and user content as a string are prefixes too", () => {
    const a = sessionOf("key-1", {}, { system: "Be terse.", messages: [{ role: "user", content: "hello" }] })
    expect(a).toBeDefined()
    // A string is one text block.
    expect(sessionOf("key-1", {}, { system: [{ type: "text", text: "Be terse." }], messages: [{ role: "user", content: [{ type: "text", text: "hello" }] }] }))
      .toBe(a)
    expect(sessionOf("key-1", {}, { system: "Be terse.", messages: [{ role: "user", content: "hello!" }] })).not.toBe(a)
    expect(sessionOf("key-1", {}, { messages: [{ role: "user", content: "hello" }] })).not.toBe(a)
    expect(sessionOf("key-1", {}, { system: "Be terse.", messages: [] })).toBeDefined()
  })

  it("a Messages body with nothing to go on has no session", () => {
    expect(sessionOf("key-1", {}, { messages: [] })).toBeUndefined()
    expect(sessionOf("key-1", {}, { messages: [{ role: "user", content: "" }], system: "" })).toBeUndefined()
    expect(sessionOf("key-1", {}, { messages: [{ role: "assistant", content: "hi" }, "junk", null] })).toBeUndefined()
  })

  it("never throws on arbitrary bodies and headers", () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.dictionary(fc.string(), fc.string()), (body, headers) => {
      const id = sessionOf("key-1", headers, body)
      expect(id === undefined || /^[A-Za-z0-9_-]{22}$/.test(id)).toBe(true)
    }))
    fc.assert(fc.property(fc.jsonValue(), fc.jsonValue(), (metadata, messages) => {
      sessionOf("key-1", {}, { metadata, messages, system: metadata })
    }))
  })
})

describe("promptCacheKeyFor", () => {
  it("is the same on every turn of a session and differs across sessions and keys", () => {
    const s1 = sessionOf("key-1", {}, turn1)
    const s1Later = sessionOf("key-1", {}, turn2)
    const s2 = sessionOf("key-1", {}, { ...turn1, instructions: "Other instructions." })
    const otherKey = sessionOf("key-2", {}, turn1)
    if (s1 === undefined || s1Later === undefined || s2 === undefined || otherKey === undefined) throw new Error("expected sessions")
    expect(promptCacheKeyFor(s1)).toBe(promptCacheKeyFor(s1Later))
    expect(promptCacheKeyFor(s1)).not.toBe(promptCacheKeyFor(s2))
    expect(promptCacheKeyFor(s1)).not.toBe(promptCacheKeyFor(otherKey))
  })

  it("is short and holds no client text (OpenAI caps prompt_cache_key at 64 characters)", () => {
    const s = sessionOf("key-1", { session_id: "my secret project name" }, {})
    if (s === undefined) throw new Error("expected a session")
    const key = promptCacheKeyFor(s)
    expect(key.length).toBeLessThanOrEqual(64)
    expect(key).toMatch(/^mg-[A-Za-z0-9_-]+$/)
    expect(key).not.toContain("secret")
  })
})
