/**
 * The simulator's reading of a prompt (toolIntent.ts), over many prompts: chat with no request for
 * a tool never calls one, and any call it makes carries what the tool's schema requires, typed as
 * the schema says, so an agent can run it.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { plannedCall } from "../../src/services/upstream/simulator/toolIntent.js"
import { claudeCodeTools, codexTools } from "./agentTools.js"

const offered = [
  ...claudeCodeTools.map((t) => ({ name: t.name, schema: t.input_schema })),
  ...codexTools.map((t) => ({ name: t.name, schema: t.parameters }))
]

type Schema = { readonly type?: string; readonly enum?: ReadonlyArray<unknown>; readonly items?: Schema; readonly properties?: Record<string, Schema>; readonly required?: ReadonlyArray<string> }

/** Whether `value` has the schema's type, its required properties, and an allowed enum value. */
const conforms = (value: unknown, schema: Schema): boolean => {
  if (schema.enum !== undefined) return schema.enum.includes(value)
  switch (schema.type) {
    case "string":
      return typeof value === "string" && value.length > 0
    case "number":
      return typeof value === "number"
    case "integer":
      return Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "array":
      return Array.isArray(value) && value.every((v) => schema.items === undefined || conforms(v, schema.items))
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return false
      const record = value as Record<string, unknown>
      return (schema.required ?? []).every((k) => k in record) &&
        Object.entries(record).every(([k, v]) => schema.properties?.[k] !== undefined && conforms(v, schema.properties[k]))
    }
    default:
      return true
  }
}

const chat = fc.constantFrom(
  "hello", "thanks", "what", "is", "a", "good", "name", "for", "my", "cat", "tell", "me", "joke", "about", "the", "weekend",
  "how", "are", "you", "today", "explain", "recursion", "briefly", "please", "in", "one", "sentence", "why", "sky", "blue",
  "write", "poem", "say", "hi", "summarise", "story", "of", "Paris", "could", "help", "with", "this", "?", "!", ",", "."
)

const requestish = fc.constantFrom(
  "run ls -la", "src/main.ts", "README.md", "https://example.com/a", "*.ts", "'quoted text'", "use the Read tool", "call update_plan",
  "in bash", "grep", "search the web", "Write", "42", "run `echo hi`", "../up/one.txt", "~/notes/todo.md"
)

describe("which tool a prompt asks for", () => {
  it("chat that names no tool, carries no path, URL, pattern or command, gets no call (property)", () => {
    fc.assert(
      fc.property(fc.array(chat, { minLength: 1, maxLength: 14 }), (words) => {
        const prompt = words.join(" ")
        expect(plannedCall(prompt, offered, { _tag: "Auto" })).toBeUndefined()
      }),
      { numRuns: 300 }
    )
  })

  it("a call has the required arguments, of the schema's types (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(chat, requestish, fc.string({ maxLength: 12 })), { minLength: 1, maxLength: 12 }), fc.boolean(), (parts, required) => {
        const call = plannedCall(parts.join(" "), offered, required ? { _tag: "Required" } : { _tag: "Auto" })
        if (required) expect(call).toBeDefined()
        if (call === undefined) return
        const tool = offered.find((t) => t.name === call.name)
        expect(tool).toBeDefined()
        expect(conforms(call.input, tool?.schema as Schema)).toBe(true)
      }),
      { numRuns: 300 }
    )
  })

  it("a named tool is called with the prompt's values even when the prompt says nothing of it", () => {
    expect(plannedCall("Say hello", offered, { _tag: "Named", name: "Read" })).toEqual({ name: "Read", input: { file_path: "Say hello" } })
    expect(plannedCall("look at src/app.ts", offered, { _tag: "Named", name: "Read" })).toEqual({ name: "Read", input: { file_path: "src/app.ts" } })
    for (const prompt of ["", "   ", "<system-reminder>only context</system-reminder>"]) {
      expect(plannedCall(prompt, offered, { _tag: "Named", name: "WebSearch" })?.input["query"]).toBe("(empty prompt)")
    }
  })
})
