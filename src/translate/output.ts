/**
 * Building blocks shared by the JSON and the streaming translation, so both produce the same
 * Responses items, usage and envelope for the same upstream answer.
 */
import type { TokenUsage } from "../domain/usage.js"
import { toResponsesUsage } from "../domain/usage.js"
import { newId } from "../domain/ids.js"
import { responseObject } from "../domain/responseObject.js"
import { foldServerToolUse } from "../domain/providerTools.js"
import { isRecord } from "./error.js"
import { restoreToolName } from "./names.js"
import type { AnthropicUsage, ToolNameMap } from "./types.js"

export interface ResponseContext {
  /** `resp_…`; the same id on every lifecycle event. */
  readonly responseId: string
  /** The model the client asked for (echoed, never the upstream alias). */
  readonly model: string
  /** Unix seconds. */
  readonly createdAt: number
  /** The client's request body, for the fields a Response echoes. */
  readonly request: Record<string, unknown>
  readonly toolNames?: ToolNameMap
  /**
   * The time now in Unix milliseconds, for `completed_at`: the Effect Clock's
   * `currentTimeMillisUnsafe`, so a gateway under TestClock answers at the test's time.
   */
  readonly now: () => number
}

export type ItemStatus = "in_progress" | "completed" | "incomplete"
export type OutputItem = Record<string, unknown>

export const outputTextPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] })

export const messageItem = (id: string, texts: ReadonlyArray<string>, status: ItemStatus): OutputItem => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: texts.map(outputTextPart)
})

export const functionCallItem = (
  id: string,
  callId: string,
  upstreamName: string,
  args: string,
  status: ItemStatus,
  names: ToolNameMap | undefined
): OutputItem => {
  const { name, namespace } = restoreToolName(upstreamName, names)
  return {
    id,
    type: "function_call",
    status,
    arguments: args,
    call_id: callId,
    name,
    ...(namespace !== undefined ? { namespace } : {})
  }
}

/** OpenAI's ids for custom tool calls are `ctc_…`; same randomness as our other ids. */
export const customCallId = (): string => `ctc_${newId("fc").slice("fc_".length)}`

/** A custom tool's raw input from the lowered `{input: string}` (or, failing that, the JSON as sent). */
export const customInputOf = (input: unknown): string => {
  if (isRecord(input) && typeof input["input"] === "string") return input["input"]
  if (typeof input === "string") return input
  return input === undefined || input === null ? "" : JSON.stringify(input)
}

/**
 * A finished or starting tool call as the client knows it: function_call, or custom_tool_call for
 * tools the client declared as `custom`. `payload` is the arguments JSON or the custom input.
 */
export const toolCallItem = (
  id: string,
  callId: string,
  upstreamName: string,
  payload: string,
  status: ItemStatus,
  names: ToolNameMap | undefined
): OutputItem => {
  const { custom, name, namespace } = restoreToolName(upstreamName, names)
  if (custom !== true) return functionCallItem(id, callId, upstreamName, payload, status, names)
  return {
    id,
    type: "custom_tool_call",
    status,
    call_id: callId,
    name,
    input: payload,
    ...(namespace !== undefined ? { namespace } : {})
  }
}

export const isCustomTool = (upstreamName: string, names: ToolNameMap | undefined): boolean =>
  restoreToolName(upstreamName, names).custom === true

/**
 * `summary` is undefined for redacted thinking, which has no readable text. Without a payload (a
 * thinking block still streaming, or cut before its signature) the item has no `encrypted_content`
 * key: the spec allows a string or nothing, not null.
 */
export const reasoningItem = (id: string, summary: string | undefined, encrypted: string | null, status: ItemStatus): OutputItem => ({
  id,
  type: "reasoning",
  status,
  summary: summary === undefined ? [] : [{ type: "summary_text", text: summary }],
  ...(encrypted === null ? {} : { encrypted_content: encrypted })
})

/** Anthropic input `{}` (or missing) -> "{}"; clients expect a JSON string either way. */
export const argumentsOf = (input: unknown): string => {
  if (input === undefined || input === null) return "{}"
  const s = JSON.stringify(input)
  return s === undefined ? "{}" : s
}

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined)

/**
 * Folds an Anthropic usage object into ours. Counters present in `u` overwrite (Anthropic sends
 * cumulative totals, never increments); absent or null ones keep their previous value. Our
 * `inputTokens` includes cache reads and writes, Anthropic's does not.
 */
export const foldUsage = (prev: TokenUsage, u: AnthropicUsage | unknown): TokenUsage => {
  if (!isRecord(u)) return prev
  const uncached = count(u["input_tokens"])
  const cacheRead = count(u["cache_read_input_tokens"]) ?? prev.cacheReadTokens
  const cacheCreation = count(u["cache_creation_input_tokens"]) ?? prev.cacheCreationTokens
  const prevUncached = prev.inputTokens - prev.cacheReadTokens - prev.cacheCreationTokens
  const details = u["output_tokens_details"]
  // Server tools billed per call (web search, web fetch), as cumulative counts too.
  const toolCalls = foldServerToolUse(prev.toolCalls, u["server_tool_use"])
  return {
    inputTokens: (uncached ?? prevUncached) + cacheRead + cacheCreation,
    outputTokens: count(u["output_tokens"]) ?? prev.outputTokens,
    cacheReadTokens: cacheRead,
    cacheCreationTokens: cacheCreation,
    reasoningTokens: (isRecord(details) ? count(details["thinking_tokens"]) : undefined) ?? prev.reasoningTokens,
    ...(toolCalls === undefined ? {} : { toolCalls })
  }
}

export type Outcome =
  | { readonly status: "completed" }
  | { readonly status: "incomplete"; readonly reason: "max_output_tokens" | "content_filter" }
  | { readonly status: "failed"; readonly code: string; readonly message: string }

export const outcomeOf = (stopReason: unknown): Outcome => {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return { status: "incomplete", reason: "max_output_tokens" }
    case "refusal":
      return { status: "incomplete", reason: "content_filter" }
    default:
      return { status: "completed" }
  }
}

/** Unix seconds; tolerates a caller passing milliseconds, which would put created_at in year 50000+. */
const seconds = (t: number): number => Math.floor(t > 1e11 ? t / 1000 : t)

/**
 * A full Response object. Echoes the request's settings, and carries every field the SDK types
 * treat as required, so strict clients (AI SDK, Codex) parse it.
 */
export const buildResponse = (
  ctx: ResponseContext,
  status: "in_progress" | Outcome["status"],
  output: ReadonlyArray<OutputItem>,
  usage: TokenUsage | null,
  outcome?: Outcome
): Record<string, unknown> =>
  responseObject({
    id: ctx.responseId,
    model: ctx.model,
    createdAt: seconds(ctx.createdAt),
    status,
    completedAt: status === "completed" ? Math.floor(ctx.now() / 1000) : null,
    output,
    error: outcome?.status === "failed" ? { code: outcome.code, message: outcome.message } : null,
    incompleteDetails: outcome?.status === "incomplete" ? { reason: outcome.reason } : null,
    usage: usage === null ? null : toResponsesUsage(usage),
    request: ctx.request
  })
