/**
 * Token usage in one shape for every platform, so Quota and pricing never care where it came from.
 * `inputTokens` follows OpenAI's meaning: it INCLUDES cached reads and cache writes
 * (Anthropic's `input_tokens` does not; the translation adds them back).
 */
import { anyCalls, mostCalls, type ToolCalls } from "./providerTools.js"

export interface TokenUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheCreationTokens: number
  readonly reasoningTokens: number
  /** Calls of tools the upstream bills per call (domain/providerTools.ts); absent: none. */
  readonly toolCalls?: ToolCalls
}

export const emptyUsage: TokenUsage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
  reasoningTokens: 0
}

/** The Responses wire form of a usage: all five keys always present, as integers (Codex is strict). */
export const toResponsesUsage = (u: TokenUsage) => ({
  input_tokens: u.inputTokens,
  input_tokens_details: { cached_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheCreationTokens },
  output_tokens: u.outputTokens,
  output_tokens_details: { reasoning_tokens: u.reasoningTokens },
  total_tokens: u.inputTokens + u.outputTokens
})

/** `usage` with the provider tool calls `calls` adds (each tool's larger count); as it is when there are none. */
export const withToolCalls = (usage: TokenUsage, calls: ToolCalls | undefined): TokenUsage => {
  if (!anyCalls(calls)) return usage
  const merged = mostCalls(usage.toolCalls, calls)
  return merged === undefined ? usage : { ...usage, toolCalls: merged }
}
