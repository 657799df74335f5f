/**
 * Whether the user's prompt asks for one of the offered tools, and the call's arguments. A model
 * answers "Say hello" in text even when an agent offers a dozen tools (Claude Code always does), so
 * the simulator calls a tool only when the prompt points at it: names it ("use the Read tool",
 * "call get_weather"), is about it (a word of its name, "weather" for get_weather, "bash" for Bash),
 * or carries what it needs (a path for a `file_path`, a command after "run" for a `command`).
 * Arguments come from the prompt, shaped to the tool's JSON schema.
 */
import { type PromptFacts, readPrompt } from "./prompt.js"
import { asArray, asNumber, asString, isRecord, type JsonObject } from "./shared.js"

export interface OfferedTool {
  readonly name: string
  /** The JSON schema of its arguments (`parameters` / `input_schema`). */
  readonly schema: unknown
}

/** `auto`: call only if asked; `required`: call one anyway (the best match, else the first). */
export type ToolChoice =
  | { readonly _tag: "Auto" }
  | { readonly _tag: "Required" }
  | { readonly _tag: "Named"; readonly name: string }

export interface PlannedCall {
  readonly name: string
  readonly input: JsonObject
}

/** Words of tool names too common to say that a prompt is about that tool. */
const GENERIC = new Set([
  "get", "set", "list", "read", "write", "edit", "create", "update", "delete", "remove", "run", "make", "call",
  "use", "fetch", "search", "find", "send", "show", "ask", "user", "question", "task", "tool", "file", "files",
  "output", "mode", "plan", "exit", "enter", "kill", "todo", "multi", "notebook", "slash", "command", "skill",
  "web", "shell", "agent", "new", "add", "open", "check", "view", "the", "and", "for", "with", "from", "info",
  "data", "current", "mcp", "input", "text", "query", "item", "items", "value", "apply", "patch", "image"
])

const nameWords = (name: string): ReadonlyArray<string> =>
  name.split(/[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])/).map((w) => w.toLowerCase()).filter((w) => w.length >= 3 && !GENERIC.has(w))

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** "use the X tool", "call X", "X tool"; or a name no sentence has by chance (get_weather, WebSearch). */
const namedIn = (name: string, text: string): boolean => {
  const n = escape(name)
  if (new RegExp(`\\b(?:use|using|call|calling|invoke|invoking)\\s+(?:the\\s+|your\\s+)?${n}(?![\\w])|(?<![\\w])${n}\\s+tool\\b`, "i").test(text)) {
    return true
  }
  const distinctive = /[_\d]/.test(name) || /[a-z][A-Z]/.test(name)
  return distinctive && new RegExp(`(?<![\\w])${n}(?![\\w])`).test(text)
}

const allWords = (name: string): ReadonlyArray<string> =>
  name.split(/[_\-.\s]+|(?<=[a-z0-9])(?=[A-Z])/).map((w) => w.toLowerCase()).filter((w) => w.length > 0)

const has = (words: ReadonlySet<string>, w: string): boolean => words.has(w) || words.has(`${w}s`) || words.has(`${w}es`)

/**
 * A distinctive word of its name ("weather", "bash"), or every word of a name of several
 * ("search the web" for WebSearch), or its one-word name as the request's verb when the prompt also
 * carries an argument ("Write 'hi' to notes.txt"; "Write a haiku" alone asks for no file).
 */
const about = (name: string, facts: PromptFacts, share: number): boolean => {
  if (nameWords(name).some((w) => has(facts.words, w))) return true
  const words = allWords(name)
  if (words.length >= 2 && words.every((w) => has(facts.words, w))) return true
  return words.length === 1 && words[0] === facts.verb && share > 0
}

type ValueKind = "path" | "url" | "command" | "pattern" | "plain"

const kindOf = (key: string): ValueKind => {
  const k = key.toLowerCase().replace(/[_-]/g, "")
  if (k.includes("path") || ["file", "filename", "dir", "directory", "folder", "cwd", "workdir"].includes(k)) return "path"
  if (k.includes("url") || k.includes("uri") || k === "link") return "url"
  if (["command", "cmd", "script", "commandline"].includes(k)) return "command"
  if (k.includes("pattern") || k.includes("glob") || k.includes("regex")) return "pattern"
  return "plain"
}

/** Whether the prompt holds a value of this kind that only a request for such a tool would carry. */
const hasEvidence = (kind: ValueKind, facts: PromptFacts): boolean => {
  switch (kind) {
    case "path":
      return facts.paths.length > 0
    case "url":
      return facts.urls.length > 0
    case "command":
      return facts.command !== undefined
    case "pattern":
      return facts.globs.length > 0
    case "plain":
      return false
  }
}

const properties = (schema: unknown): JsonObject => {
  const props = isRecord(schema) ? schema["properties"] : undefined
  return isRecord(props) ? props : {}
}

const requiredKeys = (schema: unknown): ReadonlyArray<string> =>
  isRecord(schema) ? asArray(schema["required"]).flatMap((k) => (typeof k === "string" ? [k] : [])) : []

/** The share of the arguments a tool needs (all of them when it marks none required) that the prompt carries. */
const evidence = (schema: unknown, facts: PromptFacts): number => {
  const required = requiredKeys(schema)
  const keys = required.length > 0 ? required : Object.keys(properties(schema))
  if (keys.length === 0) return 0
  return keys.filter((k) => hasEvidence(kindOf(k), facts)).length / keys.length
}

const score = (tool: OfferedTool, facts: PromptFacts): number => {
  const share = evidence(tool.schema, facts)
  const base = namedIn(tool.name, facts.text) ? 3 : about(tool.name, facts, share) ? 2 : 0
  // Carrying only a third of what a tool needs (a path for an edit, no old or new text) is no request.
  return base > 0 || share >= 0.5 ? base + share : 0
}

/** Hands out the prompt's values in order, so two path arguments get two paths while there are two. */
const cursor = <A>(values: ReadonlyArray<A>) => {
  let i = 0
  return (): A | undefined => {
    const value = values[Math.min(i, values.length - 1)]
    i++
    return value
  }
}

const fillerFor = (facts: PromptFacts) => {
  const path = cursor(facts.paths)
  const url = cursor(facts.urls)
  const glob = cursor(facts.globs)
  const quoted = cursor(facts.quoted)
  const number = cursor(facts.numbers)
  const string = (key: string): string => {
    switch (kindOf(key)) {
      case "path":
        return path() ?? facts.subject
      case "url":
        return url() ?? facts.subject
      case "command":
        return facts.command ?? facts.quoted[0] ?? facts.subject
      case "pattern":
        return glob() ?? quoted() ?? facts.subject
      case "plain":
        return quoted() ?? facts.subject
    }
  }
  const value = (key: string, schema: unknown, depth: number): unknown => {
    if (!isRecord(schema)) return string(key)
    const variants = asArray(schema["anyOf"] ?? schema["oneOf"]).filter((v) => !(isRecord(v) && v["type"] === "null"))
    if (variants.length > 0) return value(key, variants[0], depth)
    const options = asArray(schema["enum"])
    if (options.length > 0) return options.find((o) => typeof o === "string" && facts.words.has(o.toLowerCase())) ?? options[0]
    if ("const" in schema) return schema["const"]
    const rawType = schema["type"]
    const type = Array.isArray(rawType) ? asString(rawType.find((t) => t !== "null")) : asString(rawType)
    switch (type) {
      case "number":
      case "integer": {
        const n = number() ?? asNumber(schema["minimum"]) ?? 1
        return type === "integer" ? Math.trunc(n) : n
      }
      case "boolean":
        return false
      case "null":
        return null
      case "array": {
        // A shell tool taking argv (Codex's `shell`): the command through a login shell, as Codex models send it.
        if (kindOf(key) === "command" && facts.command !== undefined) return ["bash", "-lc", facts.command]
        if (kindOf(key) === "path" && facts.paths.length > 0) return [...facts.paths]
        return depth >= 3 ? [] : [value(key, schema["items"], depth + 1)]
      }
      case "object":
        return depth >= 3 ? {} : object(schema, depth + 1)
      case undefined:
        return isRecord(schema["properties"]) && depth < 3 ? object(schema, depth + 1) : string(key)
      default:
        return string(key)
    }
  }
  /** The required arguments and those the prompt names; every argument when none is marked required. */
  const object = (schema: unknown, depth: number): JsonObject => {
    const props = properties(schema)
    const required = requiredKeys(schema)
    const out: JsonObject = {}
    for (const [key, sub] of Object.entries(props)) {
      const kind = kindOf(key)
      if (required.length === 0 || required.includes(key) || (kind !== "plain" && hasEvidence(kind, facts))) {
        out[key] = value(key, sub, depth)
      }
    }
    return out
  }
  return object
}

/** The call the prompt asks for, or undefined for a text answer. */
export const plannedCall = (prompt: string, tools: ReadonlyArray<OfferedTool>, choice: ToolChoice): PlannedCall | undefined => {
  if (tools.length === 0) return undefined
  const facts = readPrompt(prompt, tools.map((t) => t.name))
  let chosen: OfferedTool | undefined
  if (choice._tag === "Named") chosen = tools.find((t) => t.name === choice.name) ?? tools[0]
  else {
    let best = 0
    for (const tool of tools) {
      const s = score(tool, facts)
      if (s > best) {
        best = s
        chosen = tool
      }
    }
    if (chosen === undefined && choice._tag === "Required") chosen = tools[0]
  }
  if (chosen === undefined) return undefined
  return { name: chosen.name, input: fillerFor(facts)(chosen.schema, 0) }
}
