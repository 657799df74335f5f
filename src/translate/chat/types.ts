/**
 * The Chat Completions shapes the Chat door answers with: a whole `chat.completion` and the
 * `chat.completion.chunk` stream frames. Type aliases, so every value is assignable to the JSON
 * record the encoders take.
 */

export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter"

export type ChatUsageOut = {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly prompt_tokens_details: { readonly cached_tokens: number }
  readonly completion_tokens_details: { readonly reasoning_tokens: number }
}

export type ChatToolCallOut = {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

/**
 * A reasoning item's replayable payload, in the `reasoning_details` convention of OpenRouter's Chat
 * API: a client that sends the assistant message back as it got it (the openai SDK's runTools,
 * most agent loops) gives the model its reasoning back, thinking signatures included.
 */
export type ReasoningDetail = {
  readonly type: "reasoning.encrypted"
  readonly id: string
  readonly data: string
  readonly format: "openai-responses-v1"
  readonly index: number
}

export type ChatMessageOut = {
  readonly role: "assistant"
  readonly content: string | null
  readonly refusal: string | null
  /** Reasoning summary text, as providers that stream reasoning separately (DeepSeek, vLLM) name it. */
  readonly reasoning_content?: string
  readonly reasoning_details?: ReadonlyArray<ReasoningDetail>
  readonly tool_calls?: ReadonlyArray<ChatToolCallOut>
  readonly annotations: ReadonlyArray<never>
}

export type ChatCompletionOut = {
  readonly id: string
  readonly object: "chat.completion"
  readonly created: number
  readonly model: string
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly message: ChatMessageOut
    readonly logprobs: null
    readonly finish_reason: FinishReason
  }>
  readonly usage: ChatUsageOut
  readonly service_tier?: string
  readonly system_fingerprint: null
}

export type ChunkToolCallDelta = {
  readonly index: number
  readonly id?: string
  readonly type?: "function"
  readonly function: { readonly name?: string; readonly arguments: string }
}

export type ChunkDelta = {
  readonly role?: "assistant"
  readonly content?: string
  readonly refusal?: string
  readonly reasoning_content?: string
  readonly reasoning_details?: ReadonlyArray<ReasoningDetail>
  readonly tool_calls?: ReadonlyArray<ChunkToolCallDelta>
}

export type ChatChunkOut = {
  readonly id: string
  readonly object: "chat.completion.chunk"
  readonly created: number
  readonly model: string
  readonly system_fingerprint: null
  readonly choices: ReadonlyArray<{
    readonly index: 0
    readonly delta: ChunkDelta
    readonly logprobs: null
    readonly finish_reason: FinishReason | null
  }>
  /** On the last chunk only, when the client asked for `stream_options.include_usage` (choices empty then). */
  readonly usage?: ChatUsageOut | null
}

/** What a failed stream writes as its last frame before `[DONE]`: the openai SDK throws it as an APIError. */
export type ChatStreamErrorOut = {
  readonly error: { readonly message: string; readonly type: string; readonly code: string | null; readonly param: null }
}
