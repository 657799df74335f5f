/**
 * What admission reads of a Chat Completions request: the texts a model reads (every message's
 * text, tool results included) for moderation and the rough token count. Pure.
 */
import type { TurnPolicy } from "../../core/admittedTurn.js"
import { roughTokens } from "../kit/roughTokens.js"
import type { ChatRequest } from "./validate.js"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Every text of the request a model will read: each message's content, as a string or text parts. */
export const chatTexts = (body: Record<string, unknown>): Array<string> => {
  const out: Array<string> = []
  const messages = body["messages"]
  if (!Array.isArray(messages)) return out
  for (const message of messages) {
    if (!isRecord(message)) continue
    const content = message["content"]
    if (typeof content === "string") out.push(content)
    else if (Array.isArray(content)) {
      for (const part of content) if (isRecord(part) && typeof part["text"] === "string") out.push(part["text"])
    }
  }
  return out
}

/** Characters / 4 of the texts and tool definitions, as for the other doors. */
export const roughChatTokens = (body: Record<string, unknown>): number => roughTokens(chatTexts(body), body["tools"])

/**
 * Chat Completions has no image generation and no provider tools the translation passes on
 * (`web_search_options` is refused): neither gate ever refuses a Chat request.
 */
export const chatPolicy = (request: ChatRequest): TurnPolicy => ({
  model: request.model,
  stream: request.stream,
  texts: () => chatTexts(request.body),
  wantsImageGeneration: false,
  providerTools: [],
  roughInputTokens: () => roughChatTokens(request.body)
})
