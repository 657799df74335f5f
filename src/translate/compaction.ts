/**
 * `POST /responses/compact` for a translated upstream (Messages, or a Chat server). The upstream
 * model summarises the conversation in one call (the conversation as a turn would send it, then a request for
 * the summary); the answer is the spec's compacted response (`object: "response.compaction"`): the
 * conversation's user messages followed by one `compaction` item whose `encrypted_content` seals
 * the summary (reasoning.ts). The client sends that window back as input, and the translation
 * reads the summary back as the text the model sees in place of the turns it replaced (history.ts).
 * Pure: the caller runs the call and bills it.
 */
import type { Result } from "effect"
import { newId } from "../domain/ids.js"
import { emptyUsage, type TokenUsage, toResponsesUsage } from "../domain/usage.js"
import { isRecord, type TranslationError } from "./error.js"
import { foldUsage } from "./output.js"
import { encodeCompaction } from "./reasoning.js"
import { defaultMaxTokensFor, responsesToMessages, type TranslateOptions } from "./request.js"
import type { AnthropicMessage, MessagesRequest } from "./types.js"

/** What the upstream model is asked, after the conversation. */
export const COMPACTION_PROMPT =
  "Stop here and compact this conversation: write the summary another assistant will continue from, " +
  "in place of every message above. Cover what the user wants, what has been decided and done so far " +
  "(files, commands, tool results that still matter), where the work stands, and what is left to do next. " +
  "Keep names, paths, identifiers, numbers and open questions exact. Answer with the summary only."

/** The most the summary may take: enough for a long session's state, far less than the window it replaces. */
export const COMPACTION_MAX_TOKENS = 8192

const inputItems = (input: unknown): ReadonlyArray<unknown> =>
  typeof input === "string" ? (input === "" ? [] : [{ role: "user", content: input }]) : Array.isArray(input) ? input : []

/**
 * The summarising request for a compact body, as a Responses request any translation takes: its
 * instructions and input as a turn would send them, the request last, no reasoning and no tool call
 * (the tools stay declared: Anthropic refuses tool_use blocks in a history without them).
 */
export const compactionBody = (body: Record<string, unknown>, maxOutputTokens: number): Record<string, unknown> => {
  const input = body["input"]
  const ask = { role: "user", content: COMPACTION_PROMPT }
  return {
    ...(typeof body["instructions"] === "string" ? { instructions: body["instructions"] } : {}),
    // Input of another type goes as it came, for the translation to refuse.
    input: typeof input === "string" || Array.isArray(input) || input === undefined || input === null
      ? [...inputItems(input), ask]
      : input,
    ...(Array.isArray(body["tools"]) ? { tools: body["tools"], tool_choice: "none" } : {}),
    max_output_tokens: maxOutputTokens
  }
}

/** The summarising Messages request: never asking above the model's own maximum, which Anthropic refuses. */
export const compactionRequest = (
  body: Record<string, unknown>,
  options: TranslateOptions
): Result.Result<MessagesRequest, TranslationError> =>
  responsesToMessages(compactionBody(body, Math.min(COMPACTION_MAX_TOKENS, defaultMaxTokensFor(options.upstreamModel))), options)

/** The input's user messages, as output items (the window keeps them, as OpenAI's compaction does). */
const userMessages = (input: unknown): ReadonlyArray<Record<string, unknown>> =>
  inputItems(input).flatMap((item) => {
    if (!isRecord(item) || item["role"] !== "user" || (item["type"] !== undefined && item["type"] !== "message")) return []
    const content = item["content"]
    const parts = typeof content === "string" ? [{ type: "input_text", text: content }] : Array.isArray(content) ? content : []
    return [{ id: newId("msg"), type: "message", status: "completed", role: "user", content: parts }]
  })

export interface CompactionContext {
  /** `resp_…` */
  readonly id: string
  /** Unix seconds. */
  readonly createdAt: number
}

/** The upstream's Messages answer -> the compacted response, and the usage to bill. */
export const compactedResponse = (
  body: Record<string, unknown>,
  message: AnthropicMessage,
  ctx: CompactionContext
): { readonly response: Record<string, unknown>; readonly usage: TokenUsage } => {
  const blocks: ReadonlyArray<unknown> = Array.isArray(message.content) ? message.content : []
  const summary = blocks.flatMap((b) => isRecord(b) && b["type"] === "text" && typeof b["text"] === "string" ? [b["text"]] : []).join("")
  return compactedWindow(body, summary, foldUsage(emptyUsage, message.usage), ctx)
}

/** A summary and what it used -> the compacted response (the input's user messages, then the sealed summary). */
export const compactedWindow = (
  body: Record<string, unknown>,
  summary: string,
  usage: TokenUsage,
  ctx: CompactionContext
): { readonly response: Record<string, unknown>; readonly usage: TokenUsage } => {
  return {
    response: {
      id: ctx.id,
      object: "response.compaction",
      created_at: ctx.createdAt,
      output: [...userMessages(body["input"]), { id: newId("cmp"), type: "compaction", encrypted_content: encodeCompaction(summary) }],
      usage: toResponsesUsage(usage)
    },
    usage
  }
}
