import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { COMPACTED_PREAMBLE } from "../../src/translate/history.js"
import {
  decodeCompaction,
  decodeReasoning,
  encodeCompaction,
  encodeReasoning,
  type MessagesRequest,
  responsesToMessages,
  restoreToolName,
  toolNameMap,
  type TranslationError
} from "../../src/translate/index.js"

const MODEL = "claude-sonnet-4-5-20250929"

const ok = (body: Record<string, unknown>, defaultMaxTokens?: number): MessagesRequest => {
  const options = defaultMaxTokens === undefined ? { upstreamModel: MODEL } : { upstreamModel: MODEL, defaultMaxTokens }
  const result = responsesToMessages({ model: "claude-sonnet-4-5", ...body }, options)
  if (Result.isFailure(result)) throw new Error(`unexpected TranslationError: ${result.failure.message} (${String(result.failure.param)})`)
  return result.success
}

const err = (body: Record<string, unknown>): TranslationError => {
  const result = responsesToMessages({ model: "claude-sonnet-4-5", ...body }, { upstreamModel: MODEL })
  if (Result.isSuccess(result)) throw new Error("expected a TranslationError")
  return result.failure
}

/** A prompt-cache breakpoint, as the translation places them (src/translate/cache.ts). */
const CC = { cache_control: { type: "ephemeral" } } as const

const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] })
const call = (call_id: string, name: string, args: string) => ({ type: "function_call", call_id, name, arguments: args })
const output = (call_id: string, out: string) => ({ type: "function_call_output", call_id, output: out })

describe("responsesToMessages: basics", () => {
  it("string input is one user message; model, stream and max_tokens are set", () => {
    const req = ok({ input: "Hello", stream: true })
    expect(req).toMatchObject({ model: MODEL, stream: true, messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }] })
    expect(ok({ input: "Hello" }).stream).toBe(false)
  })

  it("max_output_tokens becomes max_tokens; without it a per-model default, or the configured one", () => {
    expect(ok({ input: "x", max_output_tokens: 1234 }).max_tokens).toBe(1234)
    expect(ok({ input: "x" }).max_tokens).toBe(64000)
    expect(ok({ input: "x" }, 20000).max_tokens).toBe(20000)
    const opus = responsesToMessages({ model: "m", input: "x" }, { upstreamModel: "claude-opus-4-1-20250805" })
    expect(Result.getOrThrow(opus).max_tokens).toBe(32000)
  })

  it("instructions, system and developer messages go to system, in order", () => {
    const req = ok({
      instructions: "You are terse.",
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "Codex system prompt" }] },
        { role: "system", content: "Extra rule" },
        user("Hi")
      ]
    })
    expect(req.system).toEqual([
      { type: "text", text: "You are terse." },
      { type: "text", text: "Codex system prompt" },
      { type: "text", text: "Extra rule", ...CC }
    ])
    expect(req.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi", ...CC }] }])
  })

  it("a request with only a developer prompt still gets a user turn", () => {
    const req = ok({ input: [{ role: "developer", content: "Summarise the repo." }] })
    expect(req.messages).toHaveLength(1)
    expect(req.messages[0]?.role).toBe("user")
    expect(req.system).toEqual([{ type: "text", text: "Summarise the repo.", ...CC }])
  })

  it("skips empty text parts but keeps the rest of the message", () => {
    const req = ok({ input: [{ role: "user", content: [{ type: "input_text", text: "" }, { type: "input_text", text: "real" }] }] })
    expect(req.messages).toEqual([{ role: "user", content: [{ type: "text", text: "real", ...CC }] }])
  })

  it("assistant history text (output_text, refusal) becomes assistant text", () => {
    const req = ok({
      input: [
        user("Hi"),
        { type: "message", role: "assistant", id: "msg_1", status: "completed", content: [{ type: "output_text", text: "Hello!", annotations: [] }] },
        user("Bye")
      ]
    })
    expect(req.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"])
    expect(req.messages[1]?.content).toEqual([{ type: "text", text: "Hello!" }])
  })

  it("a history ending in assistant text (a prefill) loses trailing whitespace and disables thinking", () => {
    const req = ok({
      reasoning: { effort: "high" },
      input: [user("Write a haiku"), { role: "assistant", content: [{ type: "output_text", text: "Autumn moon \n" }] }]
    })
    expect(req.messages[1]).toEqual({ role: "assistant", content: [{ type: "text", text: "Autumn moon", ...CC }] })
    expect(req.thinking).toBeUndefined()
  })

  it("web_search_call records from an earlier turn are skipped; the assistant's answer stays", () => {
    const req = ok({
      input: [
        user("news?"),
        { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "news" } },
        { role: "assistant", content: [{ type: "output_text", text: "Here is the news." }] },
        user("thanks")
      ]
    })
    expect(req.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"])
    expect(req.messages[1]?.content).toEqual([{ type: "text", text: "Here is the news." }])
  })

  it("other hosted-tool history items are refused, not dropped", () => {
    expect(err({ input: [user("x"), { type: "compaction", encrypted_content: "..." }] }).message).toContain("compaction")
  })

  it("maps user and safety_identifier to metadata.user_id", () => {
    expect(ok({ input: "x", user: "u-1" }).metadata).toEqual({ user_id: "u-1" })
    expect(ok({ input: "x", user: "u-1", safety_identifier: "s-1" }).metadata).toEqual({ user_id: "s-1" })
  })
})

describe("responsesToMessages: images and files", () => {
  const image = (image_url: string) => ({ role: "user", content: [{ type: "input_image", image_url, detail: "auto" }] })

  it("data URLs become base64 image blocks with their media type", () => {
    const req = ok({ input: [image("data:image/png;base64,iVBORw0KGgo=")] })
    expect(req.messages[0]?.content).toEqual([{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" }, ...CC }])
    const jpg = ok({ input: [image("data:image/jpg;base64,/9j/4AAQ")] })
    expect(jpg.messages[0]?.content[0]).toMatchObject({ source: { media_type: "image/jpeg" } })
  })

  it("https URLs become url sources", () => {
    const req = ok({ input: [image("https://example.com/cat.webp")] })
    expect(req.messages[0]?.content).toEqual([{ type: "image", source: { type: "url", url: "https://example.com/cat.webp" }, ...CC }])
  })

  it("unsupported media types and file ids are a 400 naming the part", () => {
    const svg = err({ input: [image("data:image/svg+xml;base64,PHN2Zz4=")] })
    expect(svg.message).toMatch(/image\/svg\+xml/)
    expect(svg.param).toBe("input[0].content[0].image_url")
    const fileId = err({ input: [{ role: "user", content: [{ type: "input_image", file_id: "file-abc" }] }] })
    expect(fileId.param).toBe("input[0].content[0].file_id")
  })

  it("PDF file_data becomes a document block", () => {
    const req = ok({ input: [{ role: "user", content: [{ type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0=" }] }] })
    expect(req.messages[0]?.content).toEqual([
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0=" }, title: "a.pdf", ...CC }
    ])
  })

  it("unknown content part types are refused, not dropped", () => {
    expect(err({ input: [{ role: "user", content: [{ type: "input_audio", data: "..." }] }] }).message).toMatch(/input_audio/)
  })
})

describe("responsesToMessages: tool history", () => {
  it("a two-turn function-calling history", () => {
    const req = ok({
      input: [
        user("Weather in Paris and time in Tokyo?"),
        call("call_1", "get_weather", "{\"city\":\"Paris\"}"),
        call("call_2", "get_time", ""),
        output("call_2", "09:00"),
        output("call_1", "18C"),
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "18C and 09:00." }] },
        user("And Rome?"),
        call("call_3", "get_weather", "{\"city\":\"Rome\"}"),
        output("call_3", "")
      ]
    })
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris and time in Tokyo?" }] },
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "call_2", name: "get_time", input: {} }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_1", content: "18C" },
          { type: "tool_result", tool_use_id: "call_2", content: "09:00" }
        ]
      },
      { role: "assistant", content: [{ type: "text", text: "18C and 09:00." }] },
      // The previous request ended here: its breakpoint stays, so this one reads what it cached.
      { role: "user", content: [{ type: "text", text: "And Rome?", ...CC }] },
      { role: "assistant", content: [{ type: "tool_use", id: "call_3", name: "get_weather", input: { city: "Rome" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "call_3", content: "(empty)", ...CC }] }
    ])
  })

  it("a developer message between a call and its output does not split the pair", () => {
    const req = ok({
      input: [user("go"), call("c1", "shell", "{}"), { role: "developer", content: "Approval policy changed." }, output("c1", "done")]
    })
    expect(req.messages.map((m) => m.content.map((b) => b.type))).toEqual([["text"], ["tool_use"], ["tool_result"]])
    expect(req.system).toEqual([{ type: "text", text: "Approval policy changed.", ...CC }])
  })

  it("tool_results come first when the user also wrote text in the same turn", () => {
    const req = ok({ input: [user("go"), call("c1", "shell", "{}"), user("also this"), output("c1", "ok")] })
    expect(req.messages[2]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "c1", content: "ok" }, { type: "text", text: "also this", ...CC }]
    })
  })

  it("drops an unanswered call and an orphan output, keeping the rest", () => {
    const req = ok({
      input: [user("a"), call("c_cancelled", "shell", "{}"), user("never mind"), output("c_trimmed", "old"), user("b")]
    })
    const blocks = req.messages.flatMap((m) => m.content.map((b) => b.type))
    expect(blocks).not.toContain("tool_use")
    expect(blocks).not.toContain("tool_result")
    expect(req.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "never mind" }, { type: "text", text: "b", ...CC }] }
    ])
  })

  it("call ids outside [A-Za-z0-9_-] are sanitized the same way on both sides", () => {
    const req = ok({ input: [user("x"), call("call.1:a", "f", "{}"), output("call.1:a", "r")] })
    const use = req.messages[1]?.content[0]
    const result = req.messages[2]?.content[0]
    expect(use?.type === "tool_use" && use.id).toMatch(/^[a-zA-Z0-9_-]+$/)
    expect(result?.type === "tool_result" && result.tool_use_id).toBe(use?.type === "tool_use" && use.id)
    // Deterministic: the next request of the conversation maps it identically.
    expect(ok({ input: [user("x"), call("call.1:a", "f", "{}"), output("call.1:a", "r")] })).toEqual(req)
  })

  it("function outputs with parts keep text and images", () => {
    const req = ok({
      input: [
        user("look"),
        call("c1", "screenshot", "{}"),
        {
          type: "function_call_output",
          call_id: "c1",
          output: [{ type: "input_text", text: "here" }, { type: "input_image", image_url: "data:image/gif;base64,R0lG" }]
        }
      ]
    })
    expect(req.messages[2]?.content[0]).toEqual({
      type: "tool_result",
      tool_use_id: "c1",
      content: [{ type: "text", text: "here" }, { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lG" } }],
      ...CC
    })
  })

  it("arguments that are not a JSON object are wrapped, not lost", () => {
    const req = ok({ input: [user("x"), call("c1", "f", "not json"), output("c1", "r")] })
    expect(req.messages[1]?.content[0]).toMatchObject({ input: { _raw: "not json" } })
  })

  it("item_reference is a 400 that tells the client to send the full history", () => {
    const e = err({ input: [user("x"), { type: "item_reference", id: "msg_123" }] })
    expect(e.message).toMatch(/full conversation history/)
    expect(e.message).toMatch(/store:false/)
    expect(e.param).toBe("input[1]")
  })
})

describe("responsesToMessages: reasoning replay", () => {
  const thinking = { type: "thinking" as const, thinking: "I will call f.", signature: "sig-abc" }

  it("our reasoning item rebuilds the exact thinking block before the tool_use", () => {
    const req = ok({
      reasoning: { effort: "medium" },
      input: [
        user("x"),
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "I will call f." }], content: null, encrypted_content: encodeReasoning(thinking) },
        call("toolu_1", "f", "{}"),
        output("toolu_1", "r")
      ]
    })
    expect(req.messages[1]?.content).toEqual([thinking, { type: "tool_use", id: "toolu_1", name: "f", input: {} }])
    expect(req.thinking).toEqual({ type: "enabled", budget_tokens: 4096 })
  })

  it("redacted thinking comes back as redacted_thinking", () => {
    const redacted = { type: "redacted_thinking" as const, data: "EmwKAhgB" }
    const req = ok({
      input: [user("x"), { type: "reasoning", summary: [], encrypted_content: encodeReasoning(redacted) }, call("t1", "f", "{}"), output("t1", "r")]
    })
    expect(req.messages[1]?.content[0]).toEqual(redacted)
  })

  it("foreign reasoning (OpenAI ciphertext, no payload) is dropped; thinking is then off for the tool loop", () => {
    const req = ok({
      reasoning: { effort: "high" },
      input: [
        user("x"),
        { type: "reasoning", summary: [{ type: "summary_text", text: "..." }], encrypted_content: "gAAAAABoQ1x2..." },
        { type: "reasoning", summary: [] },
        call("t1", "f", "{}"),
        output("t1", "r")
      ]
    })
    expect(req.messages[1]?.content).toEqual([{ type: "tool_use", id: "t1", name: "f", input: {} }])
    // Anthropic rejects a tool loop with thinking on but no thinking block on the tool turn.
    expect(req.thinking).toBeUndefined()
  })
})

describe("responsesToMessages: compacted windows", () => {
  it("our compaction item is read back as its summary, where it stood", () => {
    const req = ok({ input: [user("a"), { type: "compaction", id: "cmp_1", encrypted_content: encodeCompaction("We did X.") }, user("b")] })
    expect(req.messages).toHaveLength(1)
    expect(req.messages[0]?.content.map((b) => b.type === "text" ? b.text : b.type)).toEqual(["a", `${COMPACTED_PREAMBLE}We did X.`, "b"])
  })

  it("a foreign compaction is refused (it holds the conversation), an empty one of ours dropped; a reasoning payload never passes for a summary (nor the reverse)", () => {
    const thinking = { type: "thinking" as const, thinking: "t", signature: "s" }
    for (const encrypted of ["gAAAAABforeign", encodeReasoning(thinking)]) {
      const refused = err({ input: [{ type: "compaction", encrypted_content: encrypted }, user("b")] })
      expect([refused.message, refused.param]).toEqual([expect.stringContaining("compaction"), "input[0].encrypted_content"])
    }
    const req = ok({ input: [{ type: "compaction", encrypted_content: encodeCompaction("") }, user("b")] })
    expect(req.messages).toEqual([{ role: "user", content: [{ type: "text", text: "b", ...CC }] }])
    expect(decodeReasoning(encodeCompaction("s"))).toBeUndefined()
    expect(decodeCompaction(encodeReasoning(thinking))).toBeUndefined()
    expect(decodeCompaction(encodeCompaction("s"))).toBe("s")
  })
})

describe("responsesToMessages: tools", () => {
  it("function tools get an object input_schema without $schema", () => {
    const req = ok({
      input: "x",
      tools: [
        {
          type: "function",
          name: "get_weather",
          description: "Weather",
          strict: true,
          parameters: { $schema: "http://json-schema.org/draft-07/schema#", properties: { city: { type: "string" } }, required: ["city"] }
        },
        { type: "function", name: "no_params", parameters: null }
      ]
    })
    expect(req.tools).toEqual([
      { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
      { name: "no_params", input_schema: { type: "object", properties: {} }, ...CC }
    ])
  })

  it("namespace tools are flattened to ns__child and restored through toolNameMap", () => {
    const body = {
      input: "x",
      tools: [{ type: "namespace", name: "multi_agent_v1", description: "Agents", tools: [{ type: "function", name: "spawn_agent", parameters: {} }] }]
    }
    const req = ok(body)
    expect(req.tools?.map((t) => t.name)).toEqual(["multi_agent_v1__spawn_agent"])
    expect(restoreToolName("multi_agent_v1__spawn_agent", toolNameMap(body))).toEqual({ name: "spawn_agent", namespace: "multi_agent_v1" })
  })

  it("long or dotted names get a valid <=64 char name with a hash, and map back", () => {
    const long = `mcp__${"very_long_server_name_".repeat(4)}__read_file`
    const body = { input: "x", tools: [{ type: "function", name: long }, { type: "function", name: "fs.read" }] }
    const names = ok(body).tools?.map((t) => t.name) ?? []
    for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
    expect(names[0]).not.toBe(names[1])
    const map = toolNameMap(body)
    expect(names.map((n) => restoreToolName(n, map).name)).toEqual([long, "fs.read"])
  })

  it("history calls to namespaced tools use the same flattened name as the tools list", () => {
    const req = ok({
      input: [user("x"), { ...call("c1", "spawn_agent", "{}"), namespace: "multi_agent_v1" }, output("c1", "ok")],
      tools: [{ type: "namespace", name: "multi_agent_v1", description: "", tools: [{ type: "function", name: "spawn_agent" }] }]
    })
    expect(req.messages[1]?.content[0]).toMatchObject({ name: "multi_agent_v1__spawn_agent" })
  })

  it("web_search is dropped (Codex always sends it); other hosted tools are a 400 naming the type", () => {
    expect(ok({ input: "x", tools: [{ type: "web_search", external_web_access: false }] }).tools).toBeUndefined()
    for (const type of ["image_generation", "file_search", "code_interpreter", "computer_use_preview", "mcp"]) {
      const e = err({ input: "x", tools: [{ type: "function", name: "f" }, { type }] })
      expect(e.message).toContain(type)
      expect(e.param).toBe("tools[1].type")
    }
  })

  it("custom tools become one-string-field tools; custom calls in history replay as tool_use", () => {
    const body = {
      input: [
        user("patch it"),
        { type: "custom_tool_call", call_id: "call_p", name: "apply_patch", input: "*** Begin Patch\n*** End Patch" },
        { type: "custom_tool_call_output", call_id: "call_p", output: "Done!" }
      ],
      tools: [{ type: "custom", name: "apply_patch", description: "Edit files", format: { type: "grammar", syntax: "lark", definition: "start: patch" } }],
      tool_choice: { type: "custom", name: "apply_patch" }
    }
    const req = ok(body)
    expect(req.tools?.[0]).toMatchObject({
      name: "apply_patch",
      input_schema: { type: "object", properties: { input: { type: "string" } }, required: ["input"] }
    })
    expect(req.tools?.[0]?.description).toContain("start: patch")
    expect(req.tool_choice).toEqual({ type: "tool", name: "apply_patch" })
    expect(req.messages[1]?.content).toEqual([
      { type: "tool_use", id: "call_p", name: "apply_patch", input: { input: "*** Begin Patch\n*** End Patch" } }
    ])
    expect(req.messages[2]?.content).toEqual([{ type: "tool_result", tool_use_id: "call_p", content: "Done!", ...CC }])
    expect(restoreToolName("apply_patch", toolNameMap(body))).toEqual({ name: "apply_patch", custom: true })
  })

  it("tool_choice mapping and parallel_tool_calls", () => {
    const tools = [{ type: "function", name: "f" }, { type: "function", name: "g" }]
    expect(ok({ input: "x", tools, tool_choice: "auto" }).tool_choice).toEqual({ type: "auto" })
    expect(ok({ input: "x", tools, tool_choice: "required" }).tool_choice).toEqual({ type: "any" })
    expect(ok({ input: "x", tools, tool_choice: "none" }).tool_choice).toEqual({ type: "none" })
    expect(ok({ input: "x", tools, tool_choice: { type: "function", name: "g" } }).tool_choice).toEqual({ type: "tool", name: "g" })
    expect(ok({ input: "x", tools, parallel_tool_calls: false }).tool_choice).toEqual({ type: "auto", disable_parallel_tool_use: true })
    const allowed = ok({ input: "x", tools, tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "g" }] } })
    expect(allowed.tools?.map((t) => t.name)).toEqual(["g"])
    expect(allowed.tool_choice).toEqual({ type: "any" })
  })
})

describe("responsesToMessages: reasoning, sampling and output format", () => {
  it("reasoning.effort maps to thinking budgets; none/minimal mean no thinking", () => {
    const budget = (effort: string) => ok({ input: "x", reasoning: { effort } }).thinking
    expect(budget("low")).toEqual({ type: "enabled", budget_tokens: 1024 })
    expect(budget("medium")).toEqual({ type: "enabled", budget_tokens: 4096 })
    expect(budget("high")).toEqual({ type: "enabled", budget_tokens: 10240 })
    expect(budget("xhigh")).toEqual({ type: "enabled", budget_tokens: 32768 })
    expect(budget("none")).toBeUndefined()
    expect(budget("minimal")).toBeUndefined()
    expect(ok({ input: "x" }).thinking).toBeUndefined()
  })

  it("max_tokens always exceeds the budget; a tiny max_output_tokens turns thinking off", () => {
    const capped = ok({ input: "x", max_output_tokens: 8000, reasoning: { effort: "high" } })
    expect(capped.max_tokens).toBe(8000)
    expect(capped.thinking?.budget_tokens).toBeGreaterThanOrEqual(1024)
    expect(capped.thinking?.budget_tokens).toBeLessThan(8000)
    const xhigh = Result.getOrThrow(responsesToMessages({ model: "m", input: "x", reasoning: { effort: "xhigh" } }, { upstreamModel: "claude-opus-4-1" }))
    expect(xhigh.thinking?.budget_tokens).toBeLessThan(xhigh.max_tokens)
    expect(ok({ input: "x", max_output_tokens: 1000, reasoning: { effort: "low" } }).thinking).toBeUndefined()
  })

  it("temperature and top_p pass through without thinking and are dropped with it", () => {
    expect(ok({ input: "x", temperature: 0.4 })).toMatchObject({ temperature: 0.4 })
    expect(ok({ input: "x", top_p: 0.8 })).toMatchObject({ top_p: 0.8 })
    expect(ok({ input: "x", temperature: 1.7 }).temperature).toBe(1)
    const thinking = ok({ input: "x", temperature: 0.4, top_p: 0.8, reasoning: { effort: "low" } })
    expect(thinking.temperature).toBeUndefined()
    expect(thinking.top_p).toBeUndefined()
  })

  it("a forced tool choice wins over thinking (Anthropic refuses both together)", () => {
    const req = ok({ input: "x", tools: [{ type: "function", name: "f" }], tool_choice: "required", reasoning: { effort: "high" } })
    expect(req.tool_choice).toEqual({ type: "any" })
    expect(req.thinking).toBeUndefined()
  })

  it("json_schema becomes output_config.format; json_object becomes a system instruction", () => {
    const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false }
    const req = ok({ input: "x", text: { format: { type: "json_schema", name: "out", strict: true, schema } } })
    expect(req.output_config).toEqual({ format: { type: "json_schema", schema } })
    const obj = ok({ input: "x", text: { format: { type: "json_object" } } })
    expect(obj.output_config).toBeUndefined()
    expect(obj.system?.[0]?.text).toMatch(/JSON object/)
  })

  it("stateful fields we cannot serve are refused", () => {
    expect(err({ input: "x", conversation: "conv_1" }).param).toBe("conversation")
  })
})
