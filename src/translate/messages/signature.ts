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
