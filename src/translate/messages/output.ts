/**
 * What the JSON and the streaming Responses -> Messages translations share, so both answer the
 * same way for the same upstream answer: ids, usage and thinking blocks.
 */
import { newId } from "../../domain/ids.js"
import type { TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import type { AnthropicErrorType, AnthropicUsageOut } from "./types.js"

/** `resp_abc` -> `msg_abc`, so logs on both sides line up; a fresh id when there is none. */
export const messageIdFor = (responseId: unknown): string =>
  typeof responseId === "string" && responseId !== ""
    ? `msg_${responseId.startsWith("resp_") ? responseId.slice("resp_".length) : responseId}`
    : newId("msg")

/**
 * Anthropic's usage from the billed one: its `input_tokens` excludes cached reads and cache
 * writes, which OpenAI's includes.
 */
export const anthropicUsage = (u: TokenUsage): AnthropicUsageOut => ({
  input_tokens: Math.max(0, u.inputTokens - u.cacheReadTokens - u.cacheCreationTokens),
  output_tokens: u.outputTokens,
  cache_read_input_tokens: u.cacheReadTokens,
  cache_creation_input_tokens: u.cacheCreationTokens
})

export const zeroUsage: AnthropicUsageOut = {
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0
}

/** A reasoning item's readable text: its summaries, else its raw reasoning text (gpt-oss). */
export const reasoningText = (item: Record<string, unknown>): string => {
  const pick = (parts: unknown, type: string): Array<string> =>
    Array.isArray(parts)
      ? parts.flatMap((p) => (isRecord(p) && p["type"] === type && typeof p["text"] === "string" && p["text"] !== "" ? [p["text"]] : []))
      : []
  const summary = pick(item["summary"], "summary_text")
  return (summary.length > 0 ? summary : pick(item["content"], "reasoning_text")).join("\n\n")
}

/** Between two summary parts of one thinking block. */
export const SUMMARY_SEPARATOR = "\n\n"

/** Responses error codes -> the Anthropic error types clients act on (Claude Code retries api_error and overloaded_error). */
export const errorTypeFor = (code: unknown): AnthropicErrorType => {
  switch (code) {
    case "rate_limit_exceeded":
    case "rate_limit_error":
    case "insufficient_quota":
      return "rate_limit_error"
    case "server_is_overloaded":
    case "overloaded":
    case "overloaded_error":
    case "slow_down":
      return "overloaded_error"
    case "context_length_exceeded":
    case "invalid_prompt":
    case "invalid_request_error":
    case "invalid_image":
    case "invalid_image_format":
    case "invalid_base64_image":
    case "invalid_image_url":
    case "image_too_large":
    case "image_too_small":
    case "image_parse_error":
    case "image_content_policy_violation":
    case "invalid_image_mode":
    case "image_file_too_large":
    case "unsupported_image_media_type":
    case "empty_image_file":
    case "failed_to_download_image":
    case "image_file_not_found":
      return "invalid_request_error"
    default:
      return "api_error"
  }
}
