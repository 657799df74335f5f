/**
 * An OpenAI reasoning item carried through an Anthropic client inside a thinking block's `signature`.
 *
 * With `store:false` a reasoning item can only be replayed with its `encrypted_content` (and its
 * id), and Anthropic clients send thinking blocks back verbatim, signature included. So the
 * signature is `mgr1.` + base64url(JSON {i: id, e: encrypted_content}). The prefix tells our
 * payload from a real Anthropic signature, which another provider cannot use and which is dropped.
 */
import { isRecord } from "../error.js"

const PREFIX = "mgr1."

export interface ReasoningRef {
  readonly id: string
  readonly encrypted_content: string
}

export const encodeThinkingSignature = (ref: ReasoningRef): string =>
  PREFIX + Buffer.from(JSON.stringify({ i: ref.id, e: ref.encrypted_content }), "utf8").toString("base64url")

/** The reasoning item a signature stands for, or undefined for anything that is not ours and whole. */
export const decodeThinkingSignature = (signature: unknown): ReasoningRef | undefined => {
  if (typeof signature !== "string" || !signature.startsWith(PREFIX)) return undefined
  let parsed: unknown
  try {
    // Buffer's base64url decoder skips foreign characters instead of failing; JSON.parse then
    // rejects whatever garbage that yields.
    parsed = JSON.parse(Buffer.from(signature.slice(PREFIX.length), "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  if (!isRecord(parsed)) return undefined
  const id = parsed["i"]
  const encrypted = parsed["e"]
  if (typeof id !== "string" || id === "" || typeof encrypted !== "string" || encrypted === "") return undefined
  return { id, encrypted_content: encrypted }
}

/** Whether a request's text may carry thinking blocks signed by us (a cheap test before any walk). */
export const mayCarryOurThinking = (rawBody: string): boolean => rawBody.includes(`"${PREFIX}`)

/**
 * The Messages body without the thinking blocks we signed (`mgr1.`): a conversation that began on an
 * OpenAI group and goes on on an Anthropic one would otherwise be refused there (the signature is
 * no Anthropic signature). Undefined when there were none. An assistant message left with nothing
 * keeps its blocks (the upstream's refusal then names the problem).
 */
export const withoutOurThinking = (body: Record<string, unknown>): Record<string, unknown> | undefined => {
  const messages = body["messages"]
  if (!Array.isArray(messages)) return undefined
  let changed = false
  const kept = messages.map((message: unknown) => {
    if (!isRecord(message) || message["role"] !== "assistant" || !Array.isArray(message["content"])) return message
    const content = (message["content"] as ReadonlyArray<unknown>).filter((block) =>
      !(isRecord(block) && block["type"] === "thinking" && typeof block["signature"] === "string" && block["signature"].startsWith(PREFIX))
    )
    if (content.length === (message["content"] as ReadonlyArray<unknown>).length || content.length === 0) return message
    changed = true
    return { ...message, content }
  })
  return changed ? { ...body, messages: kept } : undefined
}
