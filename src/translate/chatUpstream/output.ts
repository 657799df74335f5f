/**
 * What the JSON and the streaming Chat -> Responses translations share: usage, the outcome of a
 * finish reason, and a tool call as the client declared it.
 */
import { newId } from "../../domain/ids.js"
import type { TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import { customCallId, customInputOf, functionCallItem, isCustomTool, type ItemStatus, type Outcome, type OutputItem, toolCallItem } from "../output.js"
import type { ToolNameMap } from "../types.js"

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined)

/**
 * A Chat `usage` -> ours. `prompt_tokens` includes cached reads, as our `inputTokens` does; cached
 * reads come as `prompt_tokens_details.cached_tokens` (OpenAI, vLLM) or `prompt_cache_hit_tokens`
 * (DeepSeek). Undefined when there is no usage object.
 */
export const chatUsageOf = (u: unknown): TokenUsage | undefined => {
  if (!isRecord(u)) return undefined
  const prompt = isRecord(u["prompt_tokens_details"]) ? u["prompt_tokens_details"] : {}
  const completion = isRecord(u["completion_tokens_details"]) ? u["completion_tokens_details"] : {}
  return {
    inputTokens: count(u["prompt_tokens"]) ?? 0,
    outputTokens: count(u["completion_tokens"]) ?? 0,
    cacheReadTokens: count(prompt["cached_tokens"]) ?? count(u["prompt_cache_hit_tokens"]) ?? 0,
    cacheCreationTokens: 0,
    reasoningTokens: count(completion["reasoning_tokens"]) ?? 0
  }
}

export const outcomeOfFinish = (finishReason: unknown): Outcome => {
  switch (finishReason) {
    case "length":
      return { status: "incomplete", reason: "max_output_tokens" }
    case "content_filter":
      return { status: "incomplete", reason: "content_filter" }
    default:
      return { status: "completed" }
  }
}

/** A Chat tool call -> the client's function_call, or custom_tool_call for its custom tools. */
export const callItem = (callId: string, upstreamName: string, args: string, status: ItemStatus, names: ToolNameMap | undefined): OutputItem => {
  if (!isCustomTool(upstreamName, names)) return functionCallItem(newId("fc"), callId, upstreamName, args, status, names)
  let input: unknown = args
  try {
    input = JSON.parse(args)
  } catch {
    // Not JSON: the raw text is the input.
  }
  return toolCallItem(customCallId(), callId, upstreamName, customInputOf(input), status, names)
}
