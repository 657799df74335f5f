/**
 * A complete Responses object (the upstream's JSON answer) -> a complete `chat.completion`.
 * Message text joins into `content`, refusals into `refusal`, function calls become `tool_calls`,
 * reasoning summaries `reasoning_content`. Other items (hosted tools we never request) are skipped.
 */
import { newId } from "../../domain/ids.js"
import { fromResponsesAnswer } from "../../domain/upstreamJson.js"
import type { TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import { reasoningText } from "../messages/output.js"
import { chatUsage, completionIdFor, createdOf, finishReasonOf, reasoningDetail } from "./output.js"
import type { ChatCompletionOut, ChatToolCallOut, ReasoningDetail } from "./types.js"

export type { ChatCompletionOut } from "./types.js"

export const responseToCompletion = (
  response: Record<string, unknown>,
  ctx: { readonly model: string; readonly nowSeconds: number }
): { readonly completion: ChatCompletionOut; readonly usage: TokenUsage } => {
  const texts: Array<string> = []
  const refusals: Array<string> = []
  const reasoning: Array<string> = []
  const calls: Array<ChatToolCallOut> = []
  const details: Array<ReasoningDetail> = []
  const output: ReadonlyArray<unknown> = Array.isArray(response["output"]) ? response["output"] : []
  for (const item of output) {
    if (!isRecord(item)) continue
    switch (item["type"]) {
      case "reasoning": {
        const text = reasoningText(item)
        if (text !== "") reasoning.push(text)
        const detail = reasoningDetail(item, details.length)
        if (detail !== undefined) details.push(detail)
        break
      }
      case "message": {
        const content: ReadonlyArray<unknown> = Array.isArray(item["content"]) ? item["content"] : []
        for (const part of content) {
          if (!isRecord(part)) continue
          if (part["type"] === "output_text" && typeof part["text"] === "string") texts.push(part["text"])
          if (part["type"] === "refusal" && typeof part["refusal"] === "string") refusals.push(part["refusal"])
        }
        break
      }
      case "function_call": {
        // A call the model did not finish would run a tool on truncated arguments.
        if (item["status"] === "incomplete" || item["status"] === "in_progress") break
        const id = typeof item["call_id"] === "string" && item["call_id"] !== "" ? item["call_id"] : newId("call")
        const name = typeof item["name"] === "string" ? item["name"] : ""
        const args = typeof item["arguments"] === "string" ? item["arguments"] : "{}"
        calls.push({ id, type: "function", function: { name, arguments: args } })
        break
      }
      default:
        break
    }
  }
  const usage = fromResponsesAnswer(response)
  const tier = response["service_tier"]
  return {
    completion: {
      id: completionIdFor(response["id"]),
      object: "chat.completion",
      created: createdOf(response, ctx.nowSeconds),
      model: ctx.model,
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: texts.length > 0 ? texts.join("") : null,
          refusal: refusals.length > 0 ? refusals.join("") : null,
          ...(reasoning.length > 0 ? { reasoning_content: reasoning.join("\n\n") } : {}),
          ...(details.length > 0 ? { reasoning_details: details } : {}),
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
          annotations: []
        },
        logprobs: null,
        finish_reason: finishReasonOf(response, calls.length > 0)
      }],
      usage: chatUsage(usage),
      ...(typeof tier === "string" ? { service_tier: tier } : {}),
      system_fingerprint: null
    },
    usage
  }
}
