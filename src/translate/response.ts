/**
 * A complete Anthropic Message -> a complete Responses object (the non-streaming answer).
 * Block by block: thinking -> reasoning item, a run of text -> one message item, tool_use ->
 * function_call item (custom_tool_call for the client's custom tools). Text after a tool call starts a new message item, keeping the order the
 * model produced.
 */
import type { TokenUsage } from "../domain/usage.js"
import { emptyUsage } from "../domain/usage.js"
import { newId } from "../domain/ids.js"
import { isRecord } from "./error.js"
import {
  argumentsOf,
  buildResponse,
  customCallId,
  customInputOf,
  foldUsage,
  functionCallItem,
  isCustomTool,
  messageItem,
  type OutputItem,
  outcomeOf,
  reasoningItem,
  type ResponseContext,
  toolCallItem
} from "./output.js"
import { encodeReasoning } from "./reasoning.js"
import type { AnthropicMessage } from "./types.js"

export type { ResponseContext } from "./output.js"

export const messageToResponse = (
  message: AnthropicMessage,
  ctx: ResponseContext
): { readonly response: Record<string, unknown>; readonly usage: TokenUsage } => {
  const outcome = outcomeOf(message.stop_reason)
  const output: Array<OutputItem> = []
  // Text of the message item being built; flushed when a non-text block (or the end) arrives.
  let texts: Array<string> | undefined
  const flush = (status: "completed" | "incomplete" = "completed") => {
    if (texts !== undefined) output.push(messageItem(newId("msg"), texts, status))
    texts = undefined
  }
  const blocks: ReadonlyArray<unknown> = Array.isArray(message.content) ? message.content : []
  for (const block of blocks) {
    if (!isRecord(block)) continue
    switch (block["type"]) {
      case "text": {
        texts = [...(texts ?? []), typeof block["text"] === "string" ? block["text"] : ""]
        break
      }
      case "thinking": {
        flush()
        const thinking = typeof block["thinking"] === "string" ? block["thinking"] : ""
        const signature = typeof block["signature"] === "string" ? block["signature"] : ""
        output.push(reasoningItem(newId("rs"), thinking, encodeReasoning({ type: "thinking", thinking, signature }), "completed"))
        break
      }
      case "redacted_thinking": {
        flush()
        const data = typeof block["data"] === "string" ? block["data"] : ""
        output.push(reasoningItem(newId("rs"), undefined, encodeReasoning({ type: "redacted_thinking", data }), "completed"))
        break
      }
      case "tool_use": {
        flush()
        const callId = typeof block["id"] === "string" ? block["id"] : newId("toolu")
        const name = typeof block["name"] === "string" ? block["name"] : ""
        output.push(
          isCustomTool(name, ctx.toolNames)
            ? toolCallItem(customCallId(), callId, name, customInputOf(block["input"]), "completed", ctx.toolNames)
            : functionCallItem(newId("fc"), callId, name, argumentsOf(block["input"]), "completed", ctx.toolNames)
        )
        break
      }
      default:
        // Server-tool blocks: we never offer server tools upstream, so nothing to show.
        break
    }
  }
  // A message cut by max_tokens is the one still being written at the end.
  flush(outcome.status === "incomplete" ? "incomplete" : "completed")
  const usage = foldUsage(emptyUsage, message.usage)
  return { response: buildResponse(ctx, outcome.status, output, usage, outcome), usage }
}
