/**
 * A complete Responses object (the upstream's JSON answer) -> a complete Anthropic message.
 * Output items in order: reasoning -> thinking, message text and refusals -> text, function_call
 * -> tool_use. Other items (hosted tools we never request) are skipped.
 */
import { fromResponsesAnswer } from "../../domain/upstreamJson.js"
import type { TokenUsage } from "../../domain/usage.js"
import { newId } from "../../domain/ids.js"
import { isRecord } from "../error.js"
import { anthropicUsage, messageIdFor, reasoningText } from "./output.js"
import { encodeThinkingSignature } from "./signature.js"
import type { AnthropicBlockOut, AnthropicMessageOut, StopReason } from "./types.js"

export type { AnthropicMessageOut } from "./types.js"

/**
 * A reasoning item -> a thinking block. Only `encrypted_content` makes it replayable (requests go
 * with store:false, so the id alone names nothing upstream): without it the block carries the
 * summary with an empty signature, which the next request drops; with neither there is no block.
 */
export const thinkingBlock = (item: Record<string, unknown>, text: string): AnthropicBlockOut | undefined => {
  const id = item["id"]
  const encrypted = item["encrypted_content"]
  const signature = typeof id === "string" && id !== "" && typeof encrypted === "string" && encrypted !== ""
    ? encodeThinkingSignature({ id, encrypted_content: encrypted })
    : ""
  if (signature === "" && text === "") return undefined
  return { type: "thinking", thinking: text, signature }
}

/**
 * Arguments -> an input object. Anthropic input must be an object: arguments that are not a JSON
 * object become `{}`, which the client's tool validation turns into an error the model can fix.
 */
export const inputOf = (args: unknown): Record<string, unknown> => {
  if (typeof args !== "string" || args.trim() === "") return {}
  try {
    const parsed: unknown = JSON.parse(args)
    return isRecord(parsed) ? parsed : {}
  } catch {
    return {}
  }
}

const messageBlocks = (item: Record<string, unknown>, out: Array<AnthropicBlockOut>): void => {
  const content = item["content"]
  if (!Array.isArray(content)) return
  for (const part of content) {
    if (!isRecord(part)) continue
    const text = part["type"] === "output_text" ? part["text"] : part["type"] === "refusal" ? part["refusal"] : undefined
    if (typeof text === "string" && text !== "") out.push({ type: "text", text })
  }
}

/** A cut answer is `max_tokens` even with calls in it; a content filter stop reads as a refusal. */
const stopReasonOf = (response: Record<string, unknown>, calledTool: boolean): StopReason => {
  if (response["status"] === "incomplete") {
    const details = response["incomplete_details"]
    const reason = isRecord(details) ? details["reason"] : undefined
    if (reason === "content_filter") return "refusal"
    return "max_tokens"
  }
  return calledTool ? "tool_use" : "end_turn"
}

export const responseToMessage = (
  response: Record<string, unknown>,
  ctx: { readonly model: string }
): { readonly message: AnthropicMessageOut; readonly usage: TokenUsage } => {
  const content: Array<AnthropicBlockOut> = []
  let calledTool = false
  const output: ReadonlyArray<unknown> = Array.isArray(response["output"]) ? response["output"] : []
  for (const item of output) {
    if (!isRecord(item)) continue
    switch (item["type"]) {
      case "reasoning": {
        const block = thinkingBlock(item, reasoningText(item))
        if (block !== undefined) content.push(block)
        break
      }
      case "message":
        messageBlocks(item, content)
        break
      case "function_call": {
        // A call the model did not finish would run a tool on truncated arguments.
        if (item["status"] === "incomplete" || item["status"] === "in_progress") break
        const name = typeof item["name"] === "string" ? item["name"] : ""
        const id = typeof item["call_id"] === "string" && item["call_id"] !== "" ? item["call_id"] : newId("toolu")
        content.push({ type: "tool_use", id, name, input: inputOf(item["arguments"]) })
        calledTool = true
        break
      }
      default:
        break
    }
  }
  const usage = fromResponsesAnswer(response)
  return {
    message: {
      id: messageIdFor(response["id"]),
      type: "message",
      role: "assistant",
      model: ctx.model,
      content,
      stop_reason: stopReasonOf(response, calledTool),
      stop_sequence: null,
      usage: anthropicUsage(usage)
    },
    usage
  }
}
