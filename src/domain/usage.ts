/**
 * Token usage in one shape for every platform, so Quota and pricing never care where it came from.
 * `inputTokens` follows OpenAI's meaning: it INCLUDES cached reads and cache writes
 * (Anthropic's `input_tokens` does not; the translation adds them back).
 */
export interface TokenUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheCreationTokens: number
  readonly reasoningTokens: number
}

export const emptyUsage: TokenUsage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
  reasoningTokens: 0
}

const int = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0)

/** Reads an OpenAI Responses `usage` object (as found on response.completed / JSON bodies). */
export const fromResponsesUsage = (u: unknown): TokenUsage => {
  if (typeof u !== "object" || u === null) return emptyUsage
  const r = u as Record<string, unknown>
  const inDetails = (typeof r["input_tokens_details"] === "object" && r["input_tokens_details"]) as Record<string, unknown> | false
  const outDetails = (typeof r["output_tokens_details"] === "object" && r["output_tokens_details"]) as Record<string, unknown> | false
  return {
    inputTokens: int(r["input_tokens"]),
    outputTokens: int(r["output_tokens"]),
    cacheReadTokens: inDetails ? int(inDetails["cached_tokens"]) : 0,
    cacheCreationTokens: inDetails ? int(inDetails["cache_write_tokens"]) : 0,
    reasoningTokens: outDetails ? int(outDetails["reasoning_tokens"]) : 0
  }
}

/** The Responses wire form of a usage: all five keys always present, as integers (Codex is strict). */
export const toResponsesUsage = (u: TokenUsage) => ({
  input_tokens: u.inputTokens,
  input_tokens_details: { cached_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheCreationTokens },
  output_tokens: u.outputTokens,
  output_tokens_details: { reasoning_tokens: u.reasoningTokens },
  total_tokens: u.inputTokens + u.outputTokens
})
