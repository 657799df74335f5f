/**
 * What an upstream stream's frames pass before anything reads or relays them. An upstream may echo
 * what it was sent (the account's key in an Authorization header) in any frame: every frame loses
 * the account's credential and gateway keys (`outputRedactor`, cheap enough for every delta), and
 * a frame that is not one of its wire's events, or is an error, gets the full redaction of an
 * error body (`redactSecrets`: anything shaped like a credential), which would mangle model output
 * but is what an unknown frame or an error text deserves. Comments and unknown fields never reach
 * here as text (domain/sse.ts keeps only `event:` and `data:` lines).
 */
import { Redacted } from "effect"
import type { Account } from "../../domain/model.js"
import { outputRedactor, redactSecrets } from "../../domain/redact.js"
import type { SseFrame } from "../../domain/sse.js"

const TYPE = /"type"\s*:\s*"([^"]+)"/

/** The events of an Anthropic Messages stream, `error` aside. */
const MESSAGES_EVENTS: ReadonlySet<string> = new Set([
  "message_start",
  "content_block_start",
  "content_block_delta",
  "content_block_stop",
  "message_delta",
  "message_stop",
  "ping"
])

/** An OpenAI Responses stream's events (a growing family, all named `response.*`), failures aside. */
const isResponsesEvent = (type: string): boolean =>
  type.startsWith("response.") && type !== "response.failed" && type !== "response.error"

const isMessagesEvent = (type: string): boolean => MESSAGES_EVENTS.has(type)

/** A Chat Completions chunk names no event type: it says what it is in `object`. */
const CHAT_CHUNK = /^\{[^]*"object"\s*:\s*"chat\.completion\.chunk"/
/** A Chat server's error frame: `{"error": ...}`. */
const CHAT_ERROR = /^\{\s*"error"/

/** Whether a frame is one of its wire's events (a JSON object), as opposed to an error or anything else. */
const knownFrame = (account: Account): ((frame: SseFrame) => boolean) => {
  if (account.platform === "openai_chat") return (frame) => CHAT_CHUNK.test(frame.data) && !CHAT_ERROR.test(frame.data)
  const known = account.platform === "anthropic" ? isMessagesEvent : isResponsesEvent
  return (frame) => {
    const type = frame.event ?? TYPE.exec(frame.data)?.[1]
    return type !== undefined && known(type) && frame.data.charCodeAt(0) === 123 /* "{" */
  }
}

/** The guard for frames from `account` (its platform's grammar, its credential). */
export const frameGuard = (account: Account): ((frame: SseFrame) => SseFrame) => {
  const secrets = account.secret === undefined ? [] : [Redacted.value(account.secret)]
  const output = outputRedactor(secrets)
  const full = (text: string) => redactSecrets(text, secrets)
  const known = knownFrame(account)
  return (frame) => {
    // An event of the wire carries a JSON object; anything else is read as closely as an error body.
    const redact = known(frame) ? output : full
    const text = redact(frame.text)
    // The text holds the event line of any frame with data (a frame without data is relayed by no one).
    if (text === frame.text) return frame
    return { event: frame.event === undefined ? undefined : redact(frame.event), data: redact(frame.data), text }
  }
}
