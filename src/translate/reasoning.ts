/**
 * Anthropic thinking blocks carried through the client inside a reasoning item's `encrypted_content`.
 *
 * Anthropic requires the thinking (or redacted_thinking) block of a tool-use turn to be sent back
 * byte for byte, signature included. Responses clients (Codex, the Agents SDK, the AI SDK with
 * store:false) send reasoning items back verbatim, so the exact block rides along as
 * `gw1:` + base64url(JSON). The prefix lets us tell our payload from OpenAI ciphertext (`gAAAA…`)
 * or another gateway's, which we cannot use and therefore drop.
 */
import type { RedactedThinkingBlock, ThinkingBlock } from "./types.js"

const PREFIX = "gw1:"

type Payload = { readonly t: "thinking"; readonly thinking: string; readonly signature: string } | {
  readonly t: "redacted"
  readonly data: string
}

export const encodeReasoning = (block: ThinkingBlock | RedactedThinkingBlock): string => {
  const payload: Payload = block.type === "thinking"
    ? { t: "thinking", thinking: block.thinking, signature: block.signature }
    : { t: "redacted", data: block.data }
  return PREFIX + Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")
}

/**
 * The block an `encrypted_content` stands for, or undefined when it is not ours or cannot be
 * replayed (a thinking block without a signature came from a cut stream and would be rejected).
 */
export const decodeReasoning = (encrypted: string): ThinkingBlock | RedactedThinkingBlock | undefined => {
  if (!encrypted.startsWith(PREFIX)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(encrypted.slice(PREFIX.length), "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const p = parsed as Record<string, unknown>
  if (p["t"] === "thinking" && typeof p["thinking"] === "string" && typeof p["signature"] === "string") {
    return p["signature"] === "" ? undefined : { type: "thinking", thinking: p["thinking"], signature: p["signature"] }
  }
  if (p["t"] === "redacted" && typeof p["data"] === "string" && p["data"] !== "") {
    return { type: "redacted_thinking", data: p["data"] }
  }
  return undefined
}
