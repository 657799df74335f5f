/**
 * The wire shapes the translation reads and writes: the Anthropic Messages request, response and
 * stream events, and the Responses stream events. Only what we use is typed; upstream data is
 * untrusted JSON, so readers still check every field they touch.
 */

// ---------------------------------------------------------------------------------------------
// Anthropic request (what we send upstream)
// ---------------------------------------------------------------------------------------------

export interface CacheControl {
  readonly type: "ephemeral"
}

/** A prompt-cache breakpoint (cache.ts places them); thinking blocks cannot carry one. */
interface Breakpoint {
  readonly cache_control?: CacheControl
}

export interface TextBlock extends Breakpoint {
  readonly type: "text"
  readonly text: string
}

export type ImageMediaType = "image/jpeg" | "image/png" | "image/gif" | "image/webp"

export interface ImageBlock extends Breakpoint {
  readonly type: "image"
  readonly source:
    | { readonly type: "base64"; readonly media_type: ImageMediaType; readonly data: string }
    | { readonly type: "url"; readonly url: string }
}

export interface DocumentBlock extends Breakpoint {
  readonly type: "document"
  readonly source:
    | { readonly type: "base64"; readonly media_type: "application/pdf"; readonly data: string }
    | { readonly type: "text"; readonly media_type: "text/plain"; readonly data: string }
    | { readonly type: "url"; readonly url: string }
  readonly title?: string
}

export interface ToolUseBlock extends Breakpoint {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: Record<string, unknown>
}

export interface ToolResultBlock extends Breakpoint {
  readonly type: "tool_result"
  readonly tool_use_id: string
  readonly content: string | ReadonlyArray<TextBlock | ImageBlock | DocumentBlock>
}

export interface ThinkingBlock {
  readonly type: "thinking"
  readonly thinking: string
  readonly signature: string
}

export interface RedactedThinkingBlock {
  readonly type: "redacted_thinking"
  readonly data: string
}

export type UserContentBlock = TextBlock | ImageBlock | DocumentBlock | ToolResultBlock
export type AssistantContentBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock

export type AnthropicInputMessage =
  | { readonly role: "user"; readonly content: ReadonlyArray<UserContentBlock> }
  | { readonly role: "assistant"; readonly content: ReadonlyArray<AssistantContentBlock> }

export interface AnthropicTool extends Breakpoint {
  readonly name: string
  readonly description?: string
  readonly input_schema: Record<string, unknown>
}

export type AnthropicToolChoice =
  | { readonly type: "auto"; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "any"; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "tool"; readonly name: string; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "none" }

/** The Messages request body; plain JSON, ready for `JSON.stringify`. */
export interface MessagesRequest {
  readonly model: string
  readonly max_tokens: number
  readonly messages: ReadonlyArray<AnthropicInputMessage>
  readonly stream: boolean
  readonly system?: ReadonlyArray<TextBlock>
  readonly temperature?: number
  readonly top_p?: number
  readonly tools?: ReadonlyArray<AnthropicTool>
  readonly tool_choice?: AnthropicToolChoice
  readonly thinking?: { readonly type: "enabled"; readonly budget_tokens: number }
  readonly output_config?: { readonly format: { readonly type: "json_schema"; readonly schema: Record<string, unknown> } }
  readonly metadata?: { readonly user_id: string }
}

// ---------------------------------------------------------------------------------------------
// Anthropic response (what the upstream answers)
// ---------------------------------------------------------------------------------------------

export interface AnthropicUsage {
  readonly input_tokens?: number | null
  readonly output_tokens?: number | null
  readonly cache_creation_input_tokens?: number | null
  readonly cache_read_input_tokens?: number | null
  readonly output_tokens_details?: { readonly thinking_tokens?: number | null } | null
}

/**
 * A block in a response. Besides the four we translate, the upstream may send others
 * (`server_tool_use`, ...): they keep their `type` and are skipped.
 */
export type AnthropicResponseBlock =
  | TextBlock
  | ToolUseBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | { readonly type: "server_tool_use" | "web_search_tool_result" }

/** A non-streaming Messages response. */
export interface AnthropicMessage {
  readonly id: string
  readonly type: "message"
  readonly role: "assistant"
  readonly model: string
  readonly content: ReadonlyArray<AnthropicResponseBlock>
  readonly stop_reason: string | null
  readonly stop_sequence?: string | null
  readonly usage: AnthropicUsage
}

/**
 * One parsed upstream SSE event: `message_start`, `content_block_start`, `content_block_delta`,
 * `content_block_stop`, `message_delta`, `message_stop`, `ping`, `error`, or a type Anthropic adds
 * later (ignored). Loose on purpose: the stream translator validates every field it reads.
 */
export interface AnthropicStreamEvent {
  readonly type: string
  readonly [key: string]: unknown
}

// ---------------------------------------------------------------------------------------------
// Responses side
// ---------------------------------------------------------------------------------------------

/** One Responses stream event as sent to the client (`event: <type>` + `data: <this as JSON>`). */
export interface ResponsesStreamEvent {
  readonly type: string
  readonly sequence_number: number
  readonly [key: string]: unknown
}

/** What a flattened upstream tool name stands for on the client side. */
export interface ToolNameEntry {
  readonly name: string
  readonly namespace?: string
  /** A freeform `custom` tool, lowered upstream to `{input: string}` and restored as custom_tool_call. */
  readonly custom?: boolean
}

/** Upstream (flattened/sanitized) tool name -> the client's name; names not in it are unchanged. */
export type ToolNameMap = ReadonlyMap<string, ToolNameEntry>

