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
import { hash } from "node:crypto"

const SESSION_HEADERS = ["session_id", "session-id", "conversation_id", "conversation-id"] as const

type HeaderBag = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const headerValue = (headers: HeaderBag, name: string): string | undefined => {
  const v = headers[name]
  const s = typeof v === "string" ? v : v?.[0]
  const trimmed = s?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The stable prefix, as the text that is hashed; undefined when the request has none. */
const prefixText = (body: Readonly<Record<string, unknown>>): string | undefined => {
  let text = ""
  let found = false
  const instructions = body["instructions"]
  if (typeof instructions === "string" && instructions !== "") {
    text += `i\u0000${instructions}\u0000`
    found = true
  }
  const input = body["input"]
  if (typeof input === "string") return input === "" ? (found ? text : undefined) : `${text}u\u0000${input}`
  if (!Array.isArray(input)) return found ? text : undefined
  for (const item of input) {
    if (!isRecord(item)) break
    const role = item["role"]
    if (role !== "system" && role !== "developer" && role !== "user") break
    // Content is hashed as its JSON: stable for identical content, cheap, and covers every part type.
    text += `${role}\u0000${JSON.stringify(item["content"] ?? null)}\u0000`
    found = true
    if (role === "user") break
  }
  return found ? text : undefined
}

/** The sticky-session id of a request, or undefined when nothing identifies a conversation. */
export const sessionOf = (
  scope: string,
  headers: HeaderBag,
  body: Readonly<Record<string, unknown>>
): string | undefined => {
  let explicit: string | undefined
  for (const name of SESSION_HEADERS) {
    explicit = headerValue(headers, name)
    if (explicit !== undefined) break
  }
  let source: string | undefined
  if (explicit !== undefined) source = `h\u0000${explicit}`
  else {
    const cacheKey = body["prompt_cache_key"]
    source = typeof cacheKey === "string" && cacheKey.trim() !== "" ? `c\u0000${cacheKey}` : prefixText(body)
  }
  // One-shot hashing: a third of createHash().update().digest()'s cost for a short text.
  return source === undefined ? undefined : hash("sha256", `${scope}\u0000${source}`, "base64url").slice(0, 22)
}
