/**
 * Chat Completions chunks -> Responses stream events, one upstream chunk at a time.
 *
 * The Responses grammar is kept by the same machine that translates Anthropic streams
 * (`../streamMachine.ts`): each run of one kind of delta is read as a block, the way Anthropic
 * streams them (reasoning text -> a thinking block, content -> a text block, each tool call index
 * -> a tool_use block), so ids, indexes, sequence numbers and the terminal response come out the
 * same. Chat servers stream parallel calls one after another; a delta for a call already closed is
 * a broken stream (failed) rather than a call sent with arguments missing.
 *
 * The finish reason comes before the usage chunk, so the response ends at `[DONE]` (or at the end
 * of a stream that had a finish reason); a stream that stops before any finish reason failed.
 */
import { isRecord } from "../error.js"
import { str, UNFINISHED_MESSAGE } from "../streamEvents.js"
import type { ResponseContext } from "../output.js"
import { initialStreamState, Step, type StreamState } from "../streamMachine.js"
import type { ResponsesStreamEvent } from "../types.js"
import { chatUsageOf } from "./output.js"

export type ChatStreamState = StreamState

export const initialChatStreamState = (ctx: ResponseContext): ChatStreamState => initialStreamState(ctx)

type Step1 = readonly [ChatStreamState, ReadonlyArray<ResponsesStreamEvent>]

/** Chat finish reasons as the Anthropic stop reasons the machine knows. */
const stopReasonOf = (finish: unknown): string =>
  finish === "length" ? "max_tokens" : finish === "content_filter" ? "refusal" : finish === "tool_calls" ? "tool_use" : "end_turn"

const TEXT = "text"
const THINKING = "thinking"
const toolKey = (index: number): string => `tool:${index}`


/** Error codes a Chat server sends (`{error: {code, type}}`) -> the Responses codes clients act on. */
const errorCodeOf = (error: Record<string, unknown>): string => {
  const given = error["code"] ?? error["type"]
  if (given === "rate_limit_exceeded" || given === "rate_limit_error" || given === 429) return "rate_limit_exceeded"
  if (given === "context_length_exceeded") return "context_length_exceeded"
  return "server_error"
}

const openIf = (step: Step, key: string, block: Record<string, unknown>): void => {
  if (step.s.block?.index !== key) step.startBlock(key, block)
}

/**
 * A call's first delta carries its id (and name); later ones only arguments. A delta without an id
 * for a call that is not the open one continues a call already closed: the stream is broken.
 */
const toolDeltas = (step: Step, calls: ReadonlyArray<unknown>): boolean => {
  for (const raw of calls) {
    if (!isRecord(raw)) continue
    const index = typeof raw["index"] === "number" ? raw["index"] : 0
    const key = toolKey(index)
    const fn = isRecord(raw["function"]) ? raw["function"] : {}
    if (step.s.block?.index !== key) {
      if (str(raw["id"]) === "") return false
      step.startBlock(key, { type: "tool_use", id: str(raw["id"]), name: str(fn["name"]), input: {} })
    }
    const piece = str(fn["arguments"])
    if (piece !== "") step.delta(key, { type: "input_json_delta", partial_json: piece })
  }
  return true
}

export const stepChatStream = (state: ChatStreamState, chunk: Record<string, unknown>): Step1 => {
  if (state.phase === "done") return [state, []]
  const step = new Step(state)
  step.start()
  if (isRecord(chunk["error"])) {
    const error = chunk["error"]
    step.fail(errorCodeOf(error), str(error["message"]) || "Upstream error")
    return step.result()
  }
  const usage = chatUsageOf(chunk["usage"])
  if (usage !== undefined) step.s.usage = usage
  const choices: ReadonlyArray<unknown> = Array.isArray(chunk["choices"]) ? chunk["choices"] : []
  const choice = isRecord(choices[0]) ? choices[0] : undefined
  const delta = choice !== undefined && isRecord(choice["delta"]) ? choice["delta"] : {}
  const reasoning = str(delta["reasoning_content"] ?? delta["reasoning"])
  if (reasoning !== "") {
    openIf(step, THINKING, { type: "thinking", thinking: "", signature: "" })
    step.delta(THINKING, { type: "thinking_delta", thinking: reasoning })
  }
  const content = str(delta["content"]) + str(delta["refusal"])
  if (content !== "") {
    openIf(step, TEXT, { type: "text", text: "" })
    step.delta(TEXT, { type: "text_delta", text: content })
  }
  if (Array.isArray(delta["tool_calls"]) && !toolDeltas(step, delta["tool_calls"])) {
    step.fail("server_error", "The upstream interleaved the arguments of parallel tool calls")
    return step.result()
  }
  if (choice !== undefined && typeof choice["finish_reason"] === "string") step.s.stopReason = stopReasonOf(choice["finish_reason"])
  return step.result()
}

export type ChatStreamEnding =
  | { readonly _tag: "Done" }
  | { readonly _tag: "Eof" }
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }

/** The closing events: the terminal response at `[DONE]` or at the end after a finish reason, else a failure. */
export const endChatStream = (state: ChatStreamState, ending: ChatStreamEnding): Step1 => {
  if (state.phase === "done") return [state, []]
  const step = new Step(state)
  if (ending._tag === "Failed") step.fail(ending.code, ending.message)
  else if (state.stopReason === null) step.fail("server_error", UNFINISHED_MESSAGE)
  else {
    step.start()
    // The open block ends with the stream, except a call cut by the token limit: the machine fails
    // that response rather than hand a client a tool call with truncated arguments.
    if (!(state.stopReason === "max_tokens" && state.block?.kind === "tool")) step.closeBlock("normal")
    step.stop()
  }
  return step.result()
}
