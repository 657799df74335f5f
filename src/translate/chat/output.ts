/**
 * What the JSON and the streaming Responses -> Chat translations share, so both answer the same
 * way for the same upstream answer: ids, creation time, usage and the finish reason.
 */
import { newId } from "../../domain/ids.js"
import type { TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import type { ChatUsageOut, FinishReason, ReasoningDetail } from "./types.js"

/** A reasoning item's payload as a reasoning detail, when it has one to replay. */
export const reasoningDetail = (item: Record<string, unknown>, index: number): ReasoningDetail | undefined => {
  const id = item["id"]
  const data = item["encrypted_content"]
  return typeof id === "string" && id !== "" && typeof data === "string" && data !== ""
    ? { type: "reasoning.encrypted", id, data, format: "openai-responses-v1", index }
    : undefined
}

/** `resp_abc` -> `chatcmpl-abc`, so logs on both sides line up; a fresh id when there is none. */
export const completionIdFor = (responseId: unknown): string =>
  `chatcmpl-${typeof responseId === "string" && responseId !== ""
    ? responseId.startsWith("resp_") ? responseId.slice("resp_".length) : responseId
    : newId("resp").slice("resp_".length)}`

/** Seconds since the epoch, as Chat's `created`: the upstream's, else now. */
export const createdOf = (response: Record<string, unknown>, nowSeconds: number): number => {
  const created = response["created_at"]
  return typeof created === "number" && Number.isFinite(created) ? Math.floor(created) : nowSeconds
}

/** Chat's usage from the billed one: `prompt_tokens` includes cached reads, as OpenAI's does. */
export const chatUsage = (u: TokenUsage): ChatUsageOut => ({
  prompt_tokens: u.inputTokens,
  completion_tokens: u.outputTokens,
  total_tokens: u.inputTokens + u.outputTokens,
  prompt_tokens_details: { cached_tokens: u.cacheReadTokens },
  completion_tokens_details: { reasoning_tokens: u.reasoningTokens }
})

/** A cut answer is `length` (or `content_filter`) even with calls in it. */
export const finishReasonOf = (response: Record<string, unknown>, calledTool: boolean): FinishReason => {
  if (response["status"] === "incomplete") {
    const details = response["incomplete_details"]
    return isRecord(details) && details["reason"] === "content_filter" ? "content_filter" : "length"
  }
  return calledTool ? "tool_calls" : "stop"
}
