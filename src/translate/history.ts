/**
 * Responses `input` -> system text plus a draft list of user/assistant turns, in input order.
 * The drafts may still break Anthropic's alternation and tool-pairing rules; `pairing.ts` repairs them.
 */
import { isRecord, reject } from "./error.js"
import { partsOf, textOf, userBlock } from "./content.js"
import { upstreamCallId, upstreamToolName } from "./names.js"
import { decodeCompaction, decodeReasoning } from "./reasoning.js"
import type { AssistantContentBlock, TextBlock, ToolResultBlock, UserContentBlock } from "./types.js"

export type Draft =
  | { readonly role: "user"; readonly content: ReadonlyArray<UserContentBlock> }
  | { readonly role: "assistant"; readonly content: ReadonlyArray<AssistantContentBlock> }

export interface History {
  /** Text of system and developer messages, in order. */
  readonly system: ReadonlyArray<string>
  readonly drafts: ReadonlyArray<Draft>
}

/** What introduces a compacted window's summary to the model reading it. */
export const COMPACTED_PREAMBLE = "Summary of the earlier part of this conversation, which was compacted to save context:\n\n"

/** A function output with nothing in it still needs content: Anthropic rejects some empty results. */
const EMPTY_OUTPUT = "(empty)"

const systemText = (content: unknown, path: string): string =>
  partsOf(content, path)
    .map((part, i) => {
      const text = textOf(part, `${path}[${i}]`)
      return text ?? reject("system and developer messages may only contain text", `${path}[${i}].type`)
    })
    .filter((t) => t !== "")
    .join("\n\n")

const userContent = (content: unknown, path: string): ReadonlyArray<UserContentBlock> =>
  partsOf(content, path).flatMap((part, i) => {
    const block = userBlock(part, `${path}[${i}]`)
    return block === undefined ? [] : [block]
  })

const assistantContent = (content: unknown, path: string): ReadonlyArray<TextBlock> =>
  partsOf(content, path).flatMap((part, i) => {
    const text = textOf(part, `${path}[${i}]`)
    if (text === undefined) {
      return reject(`Unsupported assistant content part type '${String(part["type"])}'`, `${path}[${i}].type`)
    }
    return text === "" ? [] : [{ type: "text" as const, text }]
  })

const requireString = (item: Record<string, unknown>, key: string, path: string): string => {
  const v = item[key]
  return typeof v === "string" ? v : reject(`'${key}' must be a string`, `${path}.${key}`)
}

/** Arguments are JSON text; Anthropic wants an object. Non-object JSON is wrapped, never lost. */
const parseArguments = (args: unknown): Record<string, unknown> => {
  if (isRecord(args)) return args
  if (typeof args !== "string" || args.trim() === "") return {}
  try {
    const parsed: unknown = JSON.parse(args)
    return isRecord(parsed) ? parsed : { _raw: args }
  } catch {
    return { _raw: args }
  }
}

const toolResultContent = (output: unknown, path: string): ToolResultBlock["content"] => {
  if (typeof output === "string") return output === "" ? EMPTY_OUTPUT : output
  if (Array.isArray(output)) {
    const blocks = output.flatMap((part, i) => {
      if (!isRecord(part)) return reject("each output part must be an object", `${path}[${i}]`)
      const block = userBlock(part, `${path}[${i}]`)
      return block === undefined ? [] : [block]
    })
    return blocks.length === 0 ? EMPTY_OUTPUT : blocks
  }
  if (output === undefined || output === null) return EMPTY_OUTPUT
  return JSON.stringify(output)
}

/** A call item as the assistant turn Anthropic expects, named and identified like the tools list. */
const toolUse = (item: Record<string, unknown>, path: string, input: Record<string, unknown>): Draft => {
  const namespace = typeof item["namespace"] === "string" ? item["namespace"] : undefined
  return {
    role: "assistant",
    content: [{
      type: "tool_use",
      id: upstreamCallId(requireString(item, "call_id", path)),
      name: upstreamToolName(requireString(item, "name", path), namespace),
      input
    }]
  }
}

const itemReferenceMessage =
  "item_reference is not supported: this gateway keeps no response history. Send the full conversation history instead (for the AI SDK set store:false)."

const foreignCompactionMessage =
  "This compaction item was not made by this gateway for this model, and its content cannot be read here. " +
  "Compact the conversation through this gateway (POST /v1/responses/compact), or send the full history instead."

/**
 * A compacted window's item (POST /responses/compact) sent back: its summary, sealed by us, is what
 * the model reads (as a user message) in place of the turns it replaced; "" for an empty summary.
 * Another server's ciphertext cannot be read here; unlike a reasoning item it holds the
 * conversation itself, so it is refused rather than dropped: the model would otherwise answer
 * without the context it stands for.
 */
export const compactedText = (item: Record<string, unknown>, path: string): string => {
  const encrypted = item["encrypted_content"]
  const summary = typeof encrypted === "string" ? decodeCompaction(encrypted) : undefined
  if (summary === undefined) return reject(foreignCompactionMessage, `${path}.encrypted_content`)
  return summary === "" ? "" : COMPACTED_PREAMBLE + summary
}

/** One input item -> zero or more drafts (or system text). */
const readItem = (item: Record<string, unknown>, path: string, system: Array<string>, drafts: Array<Draft>): void => {
  const type = item["type"]
  const role = item["role"]
  if (type === "message" || (type === undefined && typeof role === "string")) {
    if (role === "system" || role === "developer") {
      const text = systemText(item["content"], `${path}.content`)
      if (text !== "") system.push(text)
    } else if (role === "user") {
      drafts.push({ role: "user", content: userContent(item["content"], `${path}.content`) })
    } else if (role === "assistant") {
      drafts.push({ role: "assistant", content: assistantContent(item["content"], `${path}.content`) })
    } else {
      reject(`Unsupported message role '${String(role)}'`, `${path}.role`)
    }
    return
  }
  switch (type) {
    case "function_call":
      drafts.push(toolUse(item, path, parseArguments(item["arguments"])))
      return
    case "custom_tool_call":
      // Custom tools are lowered to `{input: string}` upstream (see tools.ts).
      drafts.push(toolUse(item, path, { input: requireString(item, "input", path) }))
      return
    case "function_call_output":
    case "custom_tool_call_output": {
      drafts.push({
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: upstreamCallId(requireString(item, "call_id", path)),
          content: toolResultContent(item["output"], `${path}.output`)
        }]
      })
      return
    }
    case "reasoning": {
      // Only our own payloads can be replayed; anything else (OpenAI ciphertext, summaries
      // without a payload) is dropped: Anthropic accepts history without earlier thinking.
      const encrypted = item["encrypted_content"]
      const block = typeof encrypted === "string" ? decodeReasoning(encrypted) : undefined
      if (block !== undefined) drafts.push({ role: "assistant", content: [block] })
      return
    }
    case "compaction":
    case "compaction_summary": {
      const text = compactedText(item, path)
      if (text !== "") drafts.push({ role: "user", content: [{ type: "text", text }] })
      return
    }
    case "web_search_call":
      // A record of a hosted search (e.g. from an earlier OpenAI-backed turn). Its findings live on
      // in the assistant text that follows; Anthropic has no block to replay it as.
      return
    case "item_reference":
      return reject(itemReferenceMessage, path)
    case undefined:
      // `{id}` with neither type nor role is an item_reference in the SDK types.
      return reject(typeof item["id"] === "string" ? itemReferenceMessage : "input items need a 'type' or a 'role'", path)
    default:
      return reject(`Input item type '${String(type)}' is not supported on this model`, `${path}.type`)
  }
}

export const readHistory = (input: unknown): History => {
  const system: Array<string> = []
  const drafts: Array<Draft> = []
  if (typeof input === "string") {
    if (input !== "") drafts.push({ role: "user", content: [{ type: "text", text: input }] })
  } else if (Array.isArray(input)) {
    input.forEach((item, i) => {
      if (!isRecord(item)) reject("each input item must be an object", `input[${i}]`)
      else readItem(item, `input[${i}]`, system, drafts)
    })
  } else if (input !== undefined && input !== null) {
    reject("input must be a string or an array of items", "input")
  }
  return { system, drafts }
}
