/**
 * Messages request -> Responses request: what Claude Code sends, each mapping rule, and the
 * malformations that are a 400 naming the offending field.
 */
import { hash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { messagesToResponses } from "../../../src/translate/messages/request.js"
import { encodeThinkingSignature } from "../../../src/translate/messages/signature.js"

const ok = (body: Record<string, unknown>): Record<string, unknown> => {
  const r = messagesToResponses(body)
  if (Result.isFailure(r)) throw new Error(`unexpected failure: ${r.failure.message} at ${String(r.failure.param)}`)
  return r.success
}

const fails = (body: Record<string, unknown>): { message: string; param: string | null } => {
  const r = messagesToResponses(body)
  if (Result.isSuccess(r)) throw new Error(`expected a failure, got ${JSON.stringify(r.success)}`)
  return { message: r.failure.message, param: r.failure.param }
}

const base = { model: "gpt-5.4", max_tokens: 1024 }
const user = (content: unknown) => ({ ...base, messages: [{ role: "user", content }] })

const USER_ID = JSON.stringify({ device_id: "ab".repeat(32), account_uuid: "", session_id: "0f8e6a54-3c1b-4f3a-9d8e-2b7c5a1e9f00" })
const OURS = encodeThinkingSignature({ id: "rs_123", encrypted_content: "gAAAAB-secret" })

/** Shaped like Claude Code 2.1's second request of a Bash tool turn (reference/claude-code.md). */
const CLAUDE_CODE = {
  model: "gpt-5.4",
  max_tokens: 32000,
  stream: true,
  system: [
    { type: "text", text: "x-anthropic-billing-header: cc_version=2.1.332", cache_control: { type: "ephemeral" } },
    { type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: "ephemeral" } },
    { type: "text", text: "Use the tools available to you.", cache_control: { type: "ephemeral" } }
  ],
  tools: [
    {
      name: "Bash",
      description: "Executes a bash command",
      input_schema: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { command: { type: "string" } },
        required: ["command"],
        additionalProperties: false
      }
    },
    { name: "Read", description: "Reads a file", input_schema: { type: "object", properties: { file_path: { type: "string" } } }, cache_control: { type: "ephemeral" } },
    { type: "web_search_20250305", name: "web_search", max_uses: 5 }
  ],
  metadata: { user_id: USER_ID },
  thinking: { type: "adaptive", display: "omitted" },
  context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
  output_config: { effort: "medium", format: { type: "json_schema", schema: { type: "object" } } },
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "<system-reminder>\ncwd: /tmp/x\n</system-reminder>" },
        { type: "text", text: "run echo hi", cache_control: { type: "ephemeral" } }
      ]
    },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "", signature: OURS },
        { type: "text", text: "Running it." },
        { type: "tool_use", id: "call_abc", name: "Bash", input: { command: "echo hi" } },
        { type: "tool_use", id: "call_def", name: "Read", input: { file_path: "/nope" } }
      ]
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "call_abc", content: "hi", is_error: false },
        { type: "tool_result", tool_use_id: "call_def", content: [{ type: "text", text: "File does not exist." }], is_error: true, cache_control: { type: "ephemeral" } },
        { type: "text", text: "now explain" }
      ]
    }
  ]
}

describe("messagesToResponses", () => {
  it("translates a Claude Code request", () => {
    const out = ok(CLAUDE_CODE)
    expect(out).toEqual({
      model: "gpt-5.4",
      instructions: "x-anthropic-billing-header: cc_version=2.1.332\n\nYou are Claude Code, Anthropic's official CLI for Claude.\n\nUse the tools available to you.",
      input: [
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "<system-reminder>\ncwd: /tmp/x\n</system-reminder>" },
            { type: "input_text", text: "run echo hi" }
          ]
        },
        { type: "reasoning", id: "rs_123", encrypted_content: "gAAAAB-secret", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Running it." }] },
        { type: "function_call", call_id: "call_abc", name: "Bash", arguments: "{\"command\":\"echo hi\"}" },
        { type: "function_call", call_id: "call_def", name: "Read", arguments: "{\"file_path\":\"/nope\"}" },
        { type: "function_call_output", call_id: "call_abc", output: "hi" },
        { type: "function_call_output", call_id: "call_def", output: "Error: File does not exist." },
        { type: "message", role: "user", content: [{ type: "input_text", text: "now explain" }] }
      ],
      stream: true,
      store: false,
      tools: [
        {
          type: "function",
          name: "Bash",
          description: "Executes a bash command",
          parameters: CLAUDE_CODE.tools[0]!.input_schema,
          strict: false
        },
        { type: "function", name: "Read", description: "Reads a file", parameters: CLAUDE_CODE.tools[1]!.input_schema, strict: false }
      ],
      reasoning: { effort: "medium", summary: "auto" },
      include: ["reasoning.encrypted_content"],
      text: { format: { type: "json_schema", name: "output", schema: { type: "object" }, strict: false } },
      max_output_tokens: 32000,
      safety_identifier: hash("sha256", USER_ID, "base64url").slice(0, 32)
    })
  })

  it("hashes metadata.user_id into a short safety_identifier, stable per user", () => {
    const a = ok({ ...user("hi"), metadata: { user_id: USER_ID } })["safety_identifier"]
    const b = ok({ ...user("hi"), metadata: { user_id: USER_ID } })["safety_identifier"]
    const other = ok({ ...user("hi"), metadata: { user_id: "user_x_account_y_session_z" } })["safety_identifier"]
    expect(a).toBe(b)
    expect(a).not.toBe(other)
    expect(String(a)).toHaveLength(32)
    expect(String(a)).not.toContain("device_id")
    expect(ok(user("hi"))).not.toHaveProperty("safety_identifier")
  })

  it("takes system as a string, and leaves out empty instructions", () => {
    expect(ok({ ...user("hi"), system: "Be brief." })["instructions"]).toBe("Be brief.")
    expect(ok({ ...user("hi"), system: "" })).not.toHaveProperty("instructions")
    expect(ok({ ...user("hi"), system: [] })).not.toHaveProperty("instructions")
  })

  it("maps thinking and output_config.effort to reasoning", () => {
    const reasoning = (extra: Record<string, unknown>) => {
      const out = ok({ ...user("hi"), ...extra })
      return [out["reasoning"], out["include"]]
    }
    const on = (effort: string) => [{ effort, summary: "auto" }, ["reasoning.encrypted_content"]]
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 1024 } })).toEqual(on("low"))
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 4096 } })).toEqual(on("medium"))
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 16383 } })).toEqual(on("medium"))
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 16384 } })).toEqual(on("high"))
    expect(reasoning({ thinking: { type: "adaptive" } })).toEqual(on("medium"))
    expect(reasoning({ thinking: { type: "adaptive" }, output_config: { effort: "low" } })).toEqual(on("low"))
    expect(reasoning({ thinking: { type: "enabled", budget_tokens: 2000 }, output_config: { effort: "max" } })).toEqual(on("high"))
    expect(reasoning({ thinking: { type: "disabled" } })).toEqual([undefined, undefined])
    expect(reasoning({})).toEqual([undefined, undefined])
    // Effort without thinking: the effort only, nothing to show or replay.
    expect(reasoning({ output_config: { effort: "high" } })).toEqual([{ effort: "high" }, undefined])
  })

  it("maps tool_choice and disable_parallel_tool_use", () => {
    const tools = [{ name: "Bash", input_schema: { type: "object" } }]
    const choice = (tool_choice: unknown) => {
      const out = ok({ ...user("hi"), tools, tool_choice })
      return [out["tool_choice"], out["parallel_tool_calls"]]
    }
    expect(choice({ type: "auto" })).toEqual(["auto", undefined])
    expect(choice({ type: "any" })).toEqual(["required", undefined])
    expect(choice({ type: "tool", name: "Bash" })).toEqual([{ type: "function", name: "Bash" }, undefined])
    expect(choice({ type: "none" })).toEqual(["none", undefined])
    expect(choice({ type: "auto", disable_parallel_tool_use: true })).toEqual(["auto", false])
    expect(choice({ type: "any", disable_parallel_tool_use: true })).toEqual(["required", false])
  })

  it("drops server tools, and refuses to force one", () => {
    const tools = [{ name: "Bash", input_schema: { type: "object" } }, { type: "bash_20250124", name: "bash" }, { type: "text_editor_20250728", name: "str_replace_based_edit_tool" }]
    expect((ok({ ...user("hi"), tools })["tools"] as Array<unknown>).map((t) => (t as Record<string, unknown>)["name"])).toEqual(["Bash"])
    expect(fails({ ...user("hi"), tools, tool_choice: { type: "tool", name: "bash" } })).toEqual({
      message: "Server tool 'bash' is not available on this model, so it cannot be forced",
      param: "tool_choice.name"
    })
    const serverOnly = [{ type: "web_search_20250305", name: "web_search" }]
    expect(fails({ ...user("hi"), tools: serverOnly, tool_choice: { type: "any" } }).param).toBe("tool_choice")
    // Nothing left to choose from: no tools and no tool_choice rather than a choice upstream rejects.
    const out = ok({ ...user("hi"), tools: serverOnly, tool_choice: { type: "auto" } })
    expect(out).not.toHaveProperty("tools")
    expect(out).not.toHaveProperty("tool_choice")
  })

  it("copies sampling settings and drops what has no equivalent", () => {
    const out = ok({
      ...user("hi"),
      temperature: 0.3,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ["END"],
      service_tier: "auto",
      cache_control: { type: "ephemeral" },
      container: "c1",
      some_future_field: { x: 1 }
    })
    expect(out).toEqual({
      model: "gpt-5.4",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
      stream: false,
      store: false,
      max_output_tokens: 1024,
      temperature: 0.3,
      top_p: 0.9
    })
  })

  it("raises a max_tokens below Responses' minimum", () => {
    expect(ok({ ...user("hi"), max_tokens: 0 })["max_output_tokens"]).toBe(16)
    expect(ok({ ...user("hi"), max_tokens: 1 })["max_output_tokens"]).toBe(16)
  })

  it("translates images and documents", () => {
    const out = ok(user([
      { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
      { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" }, title: "report" },
      { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "plain words" }, title: "notes.txt" },
      { type: "document", source: { type: "content", content: [{ type: "text", text: "inner" }] } },
      { type: "text", text: "what are these?" }
    ]))
    expect(out["input"]).toEqual([{
      type: "message",
      role: "user",
      content: [
        { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
        { type: "input_image", image_url: "https://example.com/cat.jpg", detail: "auto" },
        { type: "input_file", filename: "report.pdf", file_data: "data:application/pdf;base64,JVBERi0=" },
        { type: "input_file", file_url: "https://example.com/a.pdf" },
        { type: "input_text", text: "notes.txt\n\nplain words" },
        { type: "input_text", text: "inner" },
        { type: "input_text", text: "what are these?" }
      ]
    }])
  })

  it("sends a tool result's images as a user message right after the outputs", () => {
    const out = ok({
      ...base,
      messages: [
        { role: "user", content: "take a screenshot" },
        { role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "Screenshot", input: {} }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "call_1",
              content: [{ type: "text", text: "done" }, { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/" } }]
            },
            { type: "text", text: "describe it" }
          ]
        }
      ]
    })
    expect((out["input"] as Array<unknown>).slice(2)).toEqual([
      { type: "function_call_output", call_id: "call_1", output: "done\n[1 attachment(s) from this tool result follow in the next user message]" },
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_image", image_url: "data:image/jpeg;base64,/9j/", detail: "auto" },
          { type: "input_text", text: "describe it" }
        ]
      }
    ])
  })

  it("marks failed tool results once, and sends empty and multi-text results as text", () => {
    const result = (block: Record<string, unknown>) => {
      const out = ok(user([{ type: "tool_result", tool_use_id: "call_1", ...block }]))
      return (out["input"] as Array<Record<string, unknown>>)[0]!["output"]
    }
    expect(result({ content: "command not found", is_error: true })).toBe("Error: command not found")
    expect(result({ content: "Error: exit code 1", is_error: true })).toBe("Error: exit code 1")
    expect(result({ content: "<tool_use_error>no such file</tool_use_error>", is_error: true })).toBe("<tool_use_error>no such file</tool_use_error>")
    expect(result({})).toBe("")
    expect(result({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] })).toBe("a\nb")
    expect(result({ content: [{ type: "tool_reference", tool_name: "Grep" }] })).toBe("{\"type\":\"tool_reference\",\"tool_name\":\"Grep\"}")
  })

  it("drops thinking it cannot replay, and reasoning with nothing after it", () => {
    const assistant = (content: Array<unknown>) => {
      const out = ok({ ...base, messages: [{ role: "user", content: "q" }, { role: "assistant", content }, { role: "user", content: "go on" }] })
      return (out["input"] as Array<unknown>).slice(1, -1)
    }
    expect(assistant([
      { type: "thinking", thinking: "hmm", signature: "EqQBCkYIBxgCKkAnthropicSignature" },
      { type: "redacted_thinking", data: "EmwKAhgBEgy" },
      { type: "text", text: "answer" }
    ])).toEqual([{ type: "message", role: "assistant", content: [{ type: "output_text", text: "answer" }] }])
    expect(assistant([
      { type: "text", text: "answer" },
      { type: "thinking", thinking: "late", signature: OURS }
    ])).toEqual([{ type: "message", role: "assistant", content: [{ type: "output_text", text: "answer" }] }])
    expect(assistant([
      { type: "thinking", thinking: "plan", signature: OURS },
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "x" } },
      { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [] },
      { type: "text", text: "found" }
    ])).toEqual([
      { type: "reasoning", id: "rs_123", encrypted_content: "gAAAAB-secret", summary: [{ type: "summary_text", text: "plan" }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "found" }] }
    ])
  })

  it("keeps system turns inside messages in place", () => {
    const out = ok({ ...base, messages: [{ role: "user", content: "a" }, { role: "system", content: "mind the tests" }, { role: "user", content: "b" }] })
    expect((out["input"] as Array<unknown>)[1]).toEqual({ type: "message", role: "system", content: [{ type: "input_text", text: "mind the tests" }] })
  })

  it("rejects malformed requests, naming the field", () => {
    expect(fails({ ...base, messages: "hi" })).toEqual({ message: "messages must be an array", param: "messages" })
    expect(fails({ ...base })).toEqual({ message: "messages must be an array", param: "messages" })
    expect(fails({ ...base, messages: [{ role: "user", content: "a" }, { role: "tool", content: "b" }] }).param).toBe("messages[1].role")
    expect(fails({ ...base, messages: [{ role: "user", content: 42 }] }).param).toBe("messages[0].content")
    expect(fails({ ...base, messages: [{ role: "user", content: [{ text: "no type" }] }] }).param).toBe("messages[0].content[0]")
    expect(fails({ ...base, messages: [{ role: "user", content: [{ type: "text", text: 1 }] }] }).param).toBe("messages[0].content[0].text")
    expect(fails({ ...base, messages: [{ role: "assistant", content: [{ type: "tool_use", name: "Bash", input: {} }] }] }).param).toBe(
      "messages[0].content[0].id"
    )
    expect(fails({ ...base, messages: [{ role: "assistant", content: [{ type: "tool_use", id: "c", input: {} }] }] }).param).toBe(
      "messages[0].content[0].name"
    )
    expect(fails({ ...base, messages: [{ role: "user", content: [{ type: "tool_result", content: "x" }] }] }).param).toBe(
      "messages[0].content[0].tool_use_id"
    )
    expect(fails(user([{ type: "image", source: { type: "file", file_id: "file_1" } }]))).toEqual({
      message: "image blocks with a 'file' source (Anthropic Files API) cannot be sent to this model; send the data as base64 or a URL",
      param: "messages[0].content[0].source.type"
    })
    expect(fails(user([{ type: "document", source: { type: "base64", media_type: "application/msword", data: "x" } }])).param).toBe(
      "messages[0].content[0].source.media_type"
    )
    expect(fails(user([{ type: "thinking", thinking: "x", signature: "y" }])).param).toBe("messages[0].content[0].type")
    expect(fails({ ...user("hi"), system: [{ type: "image" }] }).param).toBe("system[0]")
    expect(fails({ ...user("hi"), tools: [{ description: "no name" }] }).param).toBe("tools[0].name")
    expect(fails({ ...user("hi"), tools: [{ name: "x", input_schema: "object" }] }).param).toBe("tools[0].input_schema")
    expect(fails({ ...user("hi"), tool_choice: { type: "sometimes" } }).param).toBe("tool_choice.type")
    expect(fails({ ...user("hi"), max_tokens: "lots" }).param).toBe("max_tokens")
    expect(fails({ ...user("hi"), stream: "yes" }).param).toBe("stream")
    expect(fails({ ...user("hi"), thinking: "on" }).param).toBe("thinking")
  })
})
