/**
 * Which conversation a request belongs to, so the scheduler can keep it on one account (the
 * provider's prompt cache lives there). Pure: headers and body (as the client sent it, Responses or
 * Messages) in, an opaque id out.
 *
 * Sources, first match wins:
 * 1. an explicit session header: `session_id`, `session-id`, `conversation_id`, `conversation-id`
 *    (Codex CLI sends `session_id`), `x-claude-code-session-id` (Claude Code);
 * 2. the session in a Messages body's `metadata.user_id` (Claude Code: a JSON string with
 *    `session_id`, or the older `user_<hash>_account_<uuid>_session_<uuid>`);
 * 3. the body's `prompt_cache_key`;
 * 4. a hash of the prompt's stable prefix: Responses `instructions`, leading system/developer
 *    messages and the first user message; Messages `system` and the first user message. Later
 *    turns append, they do not change it.
 *
 * A header and a `metadata.user_id` session name the same thing (Claude Code sends the same uuid in
 * both), so they hash alike: a request that lacks the header still finds its session's account.
 *
 * The id is hashed together with `scope` (the API key's id): two tenants who pick the same session
 * name, or send the same default instructions, never share a binding. Hashing also bounds its
 * length and keeps client text out of store keys.
 */
import { hash } from "node:crypto"

const SESSION_HEADERS = ["session_id", "session-id", "conversation_id", "conversation-id", "x-claude-code-session-id"] as const

type HeaderBag = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const headerValue = (headers: HeaderBag, name: string): string | undefined => {
  const v = headers[name]
  const s = typeof v === "string" ? v : v?.[0]
  const trimmed = s?.trim()
  return trimmed === undefined || trimmed === "" ? undefined : trimmed
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** A session id taken from client text: non-blank and of a sane length (it is hashed anyway). */
const sessionText = (u: unknown): string | undefined => {
  if (typeof u !== "string") return undefined
  const s = u.trim()
  return s === "" || s.length > 256 ? undefined : s
}

const LEGACY_USER_ID = /^user_[^_]*_account_[^_]*_session_([A-Za-z0-9-]{1,128})$/

/** The session named by a Messages body's `metadata.user_id`, in either of Claude Code's formats. */
const metadataSession = (body: Readonly<Record<string, unknown>>): string | undefined => {
  const metadata = body["metadata"]
  if (!isRecord(metadata)) return undefined
  const userId = metadata["user_id"]
  if (typeof userId !== "string") return undefined
  const text = userId.trim()
  if (text.startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(text)
      return isRecord(parsed) ? sessionText(parsed["session_id"]) : undefined
    } catch {
      return undefined
    }
  }
  return LEGACY_USER_ID.exec(text)?.[1]
}

/** Responses: `instructions`, leading system/developer items and the first user item. */
const responsesPrefix = (body: Readonly<Record<string, unknown>>): string | undefined => {
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

/**
 * Messages content as hashed: a string is one text block, and `cache_control` is left out, since
 * clients move their breakpoints every turn (the first user message carries one only while it is
 * the latest).
 */
const messagesContent = (content: unknown): string | undefined => {
  if (typeof content === "string") return content === "" ? undefined : JSON.stringify([{ type: "text", text: content }])
  if (!Array.isArray(content) || content.length === 0) return undefined
  return JSON.stringify(content.map((block: unknown) => {
    if (!isRecord(block) || !("cache_control" in block)) return block
    const { cache_control: _moves, ...rest } = block
    return rest
  }))
}

/** Messages: `system` and the first user message. */
const messagesPrefix = (body: Readonly<Record<string, unknown>>, messages: ReadonlyArray<unknown>): string | undefined => {
  let text = ""
  const system = messagesContent(body["system"])
  if (system !== undefined) text += `s\u0000${system}\u0000`
  const first = messages.find((m) => isRecord(m) && m["role"] === "user")
  const user = isRecord(first) ? messagesContent(first["content"]) : undefined
  if (user !== undefined) text += `u\u0000${user}`
  return text === "" ? undefined : text
}

const prefixText = (body: Readonly<Record<string, unknown>>): string | undefined => {
  const messages = body["messages"]
  return Array.isArray(messages) ? messagesPrefix(body, messages) : responsesPrefix(body)
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
  explicit ??= metadataSession(body)
  let source: string | undefined
  if (explicit !== undefined) source = `h\u0000${explicit}`
  else {
    const cacheKey = body["prompt_cache_key"]
    source = typeof cacheKey === "string" && cacheKey.trim() !== "" ? `c\u0000${cacheKey}` : prefixText(body)
  }
  // One-shot hashing: a third of createHash().update().digest()'s cost for a short text.
  return source === undefined ? undefined : hash("sha256", `${scope}\u0000${source}`, "base64url").slice(0, 22)
}

/**
 * The `prompt_cache_key` to send an OpenAI Responses upstream for a session whose client sent none:
 * the same on every turn of the session (the upstream routes it to the same cache), different
 * across sessions. The session id is already a keyed hash of client text, so nothing leaks.
 */
export const promptCacheKeyFor = (session: string): string => `mg-${session}`

/**
 * The `prompt_cache_key` to send upstream for one the client named itself: namespaced by its
 * tenant (the key's user), so two tenants on one upstream account who pick the same name never
 * share a cache, while one user's keys still do. A family of its own (`mgu-`), apart from the
 * session keys above, and the pair is encoded unambiguously: no choice of names makes two
 * tenants' keys meet.
 */
export const tenantCacheKey = (tenant: string, clientKey: string): string =>
  `mgu-${hash("sha256", JSON.stringify([tenant, clientKey]), "base64url").slice(0, 22)}`
