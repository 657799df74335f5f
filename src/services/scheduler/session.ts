/**
 * Which conversation a request belongs to, so the scheduler can keep it on one account (the
 * provider's prompt cache lives there). Pure: headers and body in, an opaque id out.
 *
 * Sources, first match wins: an explicit session header (`session_id`, `session-id`,
 * `conversation_id`, `conversation-id`; Codex CLI sends `session_id`), the body's
 * `prompt_cache_key`, else a hash of the prompt's stable prefix (instructions, leading
 * system/developer messages and the first user message: later turns append, they do not change it).
 *
 * The id is hashed together with `scope` (the API key's id): two tenants who pick the same session
 * name, or send the same default instructions, never share a binding. Hashing also bounds its
 * length and keeps client text out of store keys.
 */
import { createHash, type Hash } from "node:crypto"

const SESSION_HEADERS = ["session_id", "session-id", "conversation_id", "conversation-id"] as const

type HeaderBag = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const headerValue = (headers: HeaderBag, name: string): string | undefined => {
  const v = headers[name]
  const s = typeof v === "string" ? v : v?.[0]
  const trimmed = s?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Feeds the stable prefix into the hash; false when the request has none. */
const hashPrefix = (hash: Hash, body: Readonly<Record<string, unknown>>): boolean => {
  let found = false
  const instructions = body["instructions"]
  if (typeof instructions === "string" && instructions !== "") {
    hash.update("i\u0000").update(instructions).update("\u0000")
    found = true
  }
  const input = body["input"]
  if (typeof input === "string") {
    if (input === "") return found
    hash.update("u\u0000").update(input)
    return true
  }
  if (!Array.isArray(input)) return found
  for (const item of input) {
    if (!isRecord(item)) break
    const role = item["role"]
    if (role !== "system" && role !== "developer" && role !== "user") break
    // Content is hashed as its JSON: stable for identical content, cheap, and covers every part type.
    hash.update(`${role}\u0000`).update(JSON.stringify(item["content"] ?? null)).update("\u0000")
    found = true
    if (role === "user") break
  }
  return found
}

/** The sticky-session id of a request, or undefined when nothing identifies a conversation. */
export const sessionOf = (
  scope: string,
  headers: HeaderBag,
  body: Readonly<Record<string, unknown>>
): string | undefined => {
  const hash = createHash("sha256").update(scope).update("\u0000")
  let explicit: string | undefined
  for (const name of SESSION_HEADERS) {
    explicit = headerValue(headers, name)
    if (explicit !== undefined) break
  }
  if (explicit !== undefined) hash.update("h\u0000").update(explicit)
  else {
    const cacheKey = body["prompt_cache_key"]
    if (typeof cacheKey === "string" && cacheKey.trim() !== "") hash.update("c\u0000").update(cacheKey)
    else if (!hashPrefix(hash, body)) return undefined
  }
  return hash.digest("base64url").slice(0, 22)
}
