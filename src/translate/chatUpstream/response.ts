/**
 * A complete `chat.completion` -> a complete Responses object (the non-streaming answer):
 * `reasoning_content` -> a reasoning item (summary text, nothing to replay), content and refusal
 * -> one message item, tool calls -> function_call items (custom_tool_call for custom tools).
 */
import { newId } from "../../domain/ids.js"
import { emptyUsage, type TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import { buildResponse, outputTextPart, type OutputItem, reasoningItem, type ResponseContext } from "../output.js"
import { callItem, chatUsageOf, outcomeOfFinish } from "./output.js"

/** The reasoning text providers send beside the answer: `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama). */
export const reasoningOf = (message: Record<string, unknown>): string => {
  const text = message["reasoning_content"] ?? message["reasoning"]
  return typeof text === "string" ? text : ""
}

/** The first choice's message, or an empty one. */
const messageOf = (completion: Record<string, unknown>): Record<string, unknown> => {
  const choices: ReadonlyArray<unknown> = Array.isArray(completion["choices"]) ? completion["choices"] : []
  const choice = isRecord(choices[0]) ? choices[0] : {}
  return isRecord(choice["message"]) ? choice["message"] : {}
}

/** The answer's text (a summary, for a compaction). */
export const completionText = (completion: Record<string, unknown>): string => {
  const content = messageOf(completion)["content"]
  return typeof content === "string" ? content : ""
}

export const completionToResponse = (
  completion: Record<string, unknown>,
  ctx: ResponseContext
): { readonly response: Record<string, unknown>; readonly usage: TokenUsage } => {
  const choices: ReadonlyArray<unknown> = Array.isArray(completion["choices"]) ? completion["choices"] : []
  const choice = isRecord(choices[0]) ? choices[0] : {}
  const message = isRecord(choice["message"]) ? choice["message"] : {}
  const outcome = outcomeOfFinish(choice["finish_reason"])
  const output: Array<OutputItem> = []
  const reasoning = reasoningOf(message)
  if (reasoning !== "") output.push(reasoningItem(newId("rs"), reasoning, null, "completed"))
  const content = typeof message["content"] === "string" ? message["content"] : ""
  const refusal = typeof message["refusal"] === "string" ? message["refusal"] : ""
  if (content !== "" || refusal !== "") {
    output.push({
      id: newId("msg"),
      type: "message",
      status: outcome.status === "incomplete" ? "incomplete" : "completed",
      role: "assistant",
      content: [...(content !== "" ? [outputTextPart(content)] : []), ...(refusal !== "" ? [{ type: "refusal", refusal }] : [])]
    })
  }
  const calls: ReadonlyArray<unknown> = Array.isArray(message["tool_calls"]) ? message["tool_calls"] : []
  for (const call of calls) {
    if (!isRecord(call) || !isRecord(call["function"])) continue
    const fn = call["function"]
    const id = typeof call["id"] === "string" && call["id"] !== "" ? call["id"] : newId("call")
    const name = typeof fn["name"] === "string" ? fn["name"] : ""
    const args = typeof fn["arguments"] === "string" ? fn["arguments"] : "{}"
    output.push(callItem(id, name, args, "completed", ctx.toolNames))
  }
  const usage = chatUsageOf(completion["usage"]) ?? emptyUsage
  return { response: buildResponse(ctx, outcome.status, output, usage, outcome), usage }
}
