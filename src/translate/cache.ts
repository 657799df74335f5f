/**
 * Prompt-cache breakpoints for a translated Messages request. Anthropic caches only up to blocks
 * marked `cache_control` (at most 4 per request) and reads the cache for the longest marked prefix
 * it has seen, in the order tools, system, messages. A Responses client cannot mark anything, so
 * the translation places them where an agent loop's next request repeats the prefix:
 * - the last tool and the last system block (the same on every turn);
 * - the last markable block of the latest message (what the next turn's request extends);
 * - the last markable block of the user message before it: the previous turn's latest message,
 *   marked as that turn marked it, so this request reads exactly the prefix the previous one wrote
 *   (Anthropic's own look-back for an earlier entry stops after 20 blocks; a tool loop adds more).
 *
 * Thinking and redacted thinking blocks cannot carry a breakpoint, and an empty text block is
 * refused with one: those are skipped for the nearest earlier block of the same message.
 */
import type { AnthropicInputMessage, AnthropicTool, CacheControl, MessagesRequest, TextBlock } from "./types.js"

const EPHEMERAL: CacheControl = { type: "ephemeral" }

/** Anthropic's limit of breakpoints per request. */
export const MAX_BREAKPOINTS = 4

type Block = AnthropicInputMessage["content"][number]

const markable = (b: Block): boolean =>
  b.type === "text" ? b.text.trim() !== "" : b.type !== "thinking" && b.type !== "redacted_thinking"

const lastMarkable = (content: ReadonlyArray<Block>): number => {
  for (let i = content.length - 1; i >= 0; i--) {
    const b = content[i]
    if (b !== undefined && markable(b)) return i
  }
  return -1
}

const markAt = <A extends object>(items: ReadonlyArray<A>, at: number): ReadonlyArray<A> =>
  items.map((item, i) => (i === at ? { ...item, cache_control: EPHEMERAL } : item))

const markMessage = (m: AnthropicInputMessage): AnthropicInputMessage => {
  const at = lastMarkable(m.content)
  // The role and its content type stay paired: each branch rebuilds its own kind of message.
  return m.role === "user"
    ? { role: "user", content: markAt(m.content, at) }
    : { role: "assistant", content: markAt(m.content, at) }
}

/** The indexes of the messages to mark: the latest markable one and the markable user message before it. */
const messageTargets = (messages: ReadonlyArray<AnthropicInputMessage>): ReadonlyArray<number> => {
  let latest = messages.length - 1
  while (latest >= 0 && lastMarkable(messages[latest]?.content ?? []) < 0) latest--
  if (latest < 0) return []
  let previous = latest - 1
  while (previous >= 0) {
    const m = messages[previous]
    if (m?.role === "user" && lastMarkable(m.content) >= 0) break
    previous--
  }
  return previous >= 0 ? [previous, latest] : [latest]
}

/** `request` with its breakpoints placed (it must carry none yet: a Responses client cannot send any). */
export const placeBreakpoints = (request: MessagesRequest): MessagesRequest => {
  const tools: ReadonlyArray<AnthropicTool> | undefined = request.tools === undefined || request.tools.length === 0
    ? request.tools
    : markAt(request.tools, request.tools.length - 1)
  const system: ReadonlyArray<TextBlock> | undefined = request.system === undefined
    ? undefined
    : markAt(request.system, lastMarkable(request.system))
  const targets = messageTargets(request.messages)
  const messages = targets.length === 0
    ? request.messages
    : request.messages.map((m, i) => (targets.includes(i) ? markMessage(m) : m))
  return {
    ...request,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(tools !== undefined ? { tools } : {})
  }
}
