/**
 * The Anthropic Messages shapes the Messages door answers with when the upstream speaks OpenAI
 * Responses: a whole message (JSON answer) and the stream events. Type aliases, not interfaces,
 * so every event is assignable to the `{type, [field]: unknown}` that `encodeEvent` takes.
 */
import type { TextBlock, ThinkingBlock, ToolUseBlock } from "../types.js"

export type { TextBlock, ThinkingBlock, ToolUseBlock } from "../types.js"

export type StopReason = "end_turn" | "max_tokens" | "tool_use" | "refusal"

/** Anthropic's usage: `input_tokens` excludes the cached reads and cache writes. */
export type AnthropicUsageOut = {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_input_tokens: number
  readonly cache_creation_input_tokens: number
}

export type AnthropicBlockOut = TextBlock | ThinkingBlock | ToolUseBlock

export type AnthropicMessageOut = {
  readonly id: string
  readonly type: "message"
  readonly role: "assistant"
  readonly model: string
  readonly content: ReadonlyArray<AnthropicBlockOut>
  readonly stop_reason: StopReason | null
  readonly stop_sequence: null
  readonly usage: AnthropicUsageOut
}

/** The error types of an Anthropic `error` event (reference/protocols.md 2.5). */
export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error"

export type BlockDelta =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "thinking_delta"; readonly thinking: string }
  | { readonly type: "signature_delta"; readonly signature: string }
  | { readonly type: "input_json_delta"; readonly partial_json: string }

export type AnthropicStreamEventOut =
  | { readonly type: "message_start"; readonly message: AnthropicMessageOut }
  | { readonly type: "content_block_start"; readonly index: number; readonly content_block: AnthropicBlockOut }
  | { readonly type: "content_block_delta"; readonly index: number; readonly delta: BlockDelta }
  | { readonly type: "content_block_stop"; readonly index: number }
  | {
    readonly type: "message_delta"
    readonly delta: { readonly stop_reason: StopReason; readonly stop_sequence: null }
    readonly usage: AnthropicUsageOut
  }
  | { readonly type: "message_stop" }
  | { readonly type: "ping" }
  | { readonly type: "error"; readonly error: { readonly type: AnthropicErrorType; readonly message: string } }
