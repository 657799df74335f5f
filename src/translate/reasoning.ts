/**
 * What the gateway hands a Responses client to send back verbatim, sealed in an item's
 * `encrypted_content`: the Anthropic thinking blocks of a reasoning item, and the summary of a
 * compaction item (the compacted window of `/responses/compact`).
 *
 * Anthropic requires the thinking (or redacted_thinking) block of a tool-use turn to be sent back
 * byte for byte, signature included. Responses clients (Codex, the Agents SDK, the AI SDK with
 * store:false) send reasoning and compaction items back verbatim, so the exact block (or the
 * summary) rides along as `gw1:` + base64url(JSON). The prefix lets us tell our payload from
 * OpenAI ciphertext (`gAAAA…`) or another gateway's, which we cannot use and therefore drop.
 */
import { isRecord } from "./error.js"
import type { RedactedThinkingBlock, ThinkingBlock } from "./types.js"

const PREFIX = "gw1:"

type Payload =
  | { readonly t: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly t: "redacted"; readonly data: string }
  | { readonly t: "compaction"; readonly summary: string }

const seal = (payload: Payload): string => PREFIX + Buffer.from(JSON.stringify(payload), "utf8").toString("base64url")

/** The payload an `encrypted_content` carries, when it is ours and whole. */
const unseal = (encrypted: string): Record<string, unknown> | undefined => {
  if (!encrypted.startsWith(PREFIX)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(encrypted.slice(PREFIX.length), "base64url").toString("utf8"))
  } catch {
    return undefined
  }
  return isRecord(parsed) ? parsed : undefined
}

export const encodeReasoning = (block: ThinkingBlock | RedactedThinkingBlock): string =>
  seal(
    block.type === "thinking"
      ? { t: "thinking", thinking: block.thinking, signature: block.signature }
      : { t: "redacted", data: block.data }
  )

/**
 * The block an `encrypted_content` stands for, or undefined when it is not ours or cannot be
 * replayed (a thinking block without a signature came from a cut stream and would be rejected).
 */
export const decodeReasoning = (encrypted: string): ThinkingBlock | RedactedThinkingBlock | undefined => {
  const p = unseal(encrypted)
  if (p === undefined) return undefined
  if (p["t"] === "thinking" && typeof p["thinking"] === "string" && typeof p["signature"] === "string") {
    return p["signature"] === "" ? undefined : { type: "thinking", thinking: p["thinking"], signature: p["signature"] }
  }
  if (p["t"] === "redacted" && typeof p["data"] === "string" && p["data"] !== "") {
    return { type: "redacted_thinking", data: p["data"] }
  }
  return undefined
}

/** A compaction item's `encrypted_content` for the summary the upstream model wrote. */
export const encodeCompaction = (summary: string): string => seal({ t: "compaction", summary })

/** The summary a compaction item's `encrypted_content` stands for, or undefined when it is not ours. */
export const decodeCompaction = (encrypted: string): string | undefined => {
  const p = unseal(encrypted)
  return p !== undefined && p["t"] === "compaction" && typeof p["summary"] === "string" ? p["summary"] : undefined
}
