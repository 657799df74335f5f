/**
 * What admission reads of a Messages request: the texts a model reads (system, messages, tool
 * results) for moderation and the rough token count. Pure.
 */
import type { TurnPolicy } from "../../core/admittedTurn.js"
import type { Platform } from "../../domain/config.js"
import { messagesToolOf, type ProviderTool, providerToolsIn } from "../../domain/providerTools.js"
import { roughTokens } from "../kit/roughTokens.js"
import type { MessagesRequest } from "./validate.js"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const pushTexts = (content: unknown, out: Array<string>): void => {
  if (typeof content === "string") {
    out.push(content)
    return
  }
  if (!Array.isArray(content)) return
  for (const block of content) {
    if (!isRecord(block)) continue
    if (typeof block["text"] === "string") out.push(block["text"])
    // A tool result's content is text the model reads as well.
    else if (block["type"] === "tool_result") pushTexts(block["content"], out)
  }
}

/** Every text of the request a model will read: the system prompt and each message's text. */
export const messagesTexts = (body: Record<string, unknown>): Array<string> => {
  const out: Array<string> = []
  pushTexts(body["system"], out)
  const messages = body["messages"]
  if (Array.isArray(messages)) {
    for (const message of messages) if (isRecord(message)) pushTexts(message["content"], out)
  }
  return out
}

/** Characters / 4 of the texts and tool definitions, as for Responses requests (endpoints/responses/policy.ts). */
export const roughMessagesTokens = (body: Record<string, unknown>): number => roughTokens(messagesTexts(body), body["tools"])

/**
 * The provider tools (billed per call upstream) a request gives its upstream: the server tools in
 * `tools` on a group the request passes through to (Anthropic's). An `openai` or `openai_chat`
 * group's translation drops server tools (translate/messages/request.ts): none reaches it.
 */
export const messagesProviderTools = (body: Record<string, unknown>, platform: Platform): ReadonlyArray<ProviderTool> =>
  platform === "openai" || platform === "openai_chat" ? [] : providerToolsIn(body["tools"], messagesToolOf)

/** The Messages API has no image generation: the image gate never refuses a Messages request. */
export const messagesPolicy = (request: MessagesRequest, platform: Platform): TurnPolicy => ({
  model: request.model,
  stream: request.stream,
  texts: () => messagesTexts(request.body),
  wantsImageGeneration: false,
  providerTools: messagesProviderTools(request.body, platform),
  roughInputTokens: () => roughMessagesTokens(request.body)
})
