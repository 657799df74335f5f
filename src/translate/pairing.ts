/**
 * Turns draft turns into a message list Anthropic accepts:
 * - roles alternate (consecutive same-role turns are merged, so parallel calls share one assistant
 *   turn and their outputs one user turn);
 * - every tool_use is answered by a tool_result in the very next user turn, results first and in
 *   call order;
 * - a call nobody answered (cancelled turn) and a result whose call is gone (trimmed history) are
 *   dropped, since Anthropic rejects both;
 * - the conversation starts with, and contains, a user turn.
 */
import type { Draft } from "./history.js"
import type { AnthropicInputMessage, AssistantContentBlock, UserContentBlock } from "./types.js"

/** Stands in for a user turn when the client sent none (e.g. only a developer prompt). */
export const PLACEHOLDER_USER_TEXT = "Continue."

const merge = (drafts: ReadonlyArray<Draft>): Array<Draft> => {
  const out: Array<Draft> = []
  for (const d of drafts) {
    if (d.content.length === 0) continue
    const last = out[out.length - 1]
    if (last?.role === "user" && d.role === "user") {
      out[out.length - 1] = { role: "user", content: [...last.content, ...d.content] }
    } else if (last?.role === "assistant" && d.role === "assistant") {
      out[out.length - 1] = { role: "assistant", content: [...last.content, ...d.content] }
    } else {
      out.push(d)
    }
  }
  return out
}

const toolUseIds = (d: Draft | undefined): Array<string> =>
  d?.role === "assistant" ? d.content.flatMap((b) => (b.type === "tool_use" ? [b.id] : [])) : []

const toolResultIds = (d: Draft | undefined): Set<string> =>
  new Set(d?.role === "user" ? d.content.flatMap((b) => (b.type === "tool_result" ? [b.tool_use_id] : [])) : [])

/** Keeps each tool_use answered by the next turn; drops duplicates of an id. */
const keepAnswered = (content: ReadonlyArray<AssistantContentBlock>, answered: Set<string>): Array<AssistantContentBlock> => {
  const seen = new Set<string>()
  const kept = content.filter((b) => {
    if (b.type !== "tool_use") return true
    if (!answered.has(b.id) || seen.has(b.id)) return false
    seen.add(b.id)
    return true
  })
  // Thinking alone is not a turn: it only has meaning next to the text or tool call it led to.
  return kept.some((b) => b.type === "text" || b.type === "tool_use") ? kept : []
}

/** Keeps results of the previous turn's calls, first and in call order; other blocks follow. */
const keepPaired = (content: ReadonlyArray<UserContentBlock>, callOrder: ReadonlyArray<string>): Array<UserContentBlock> => {
  const results = new Map<string, UserContentBlock>()
  for (const b of content) {
    if (b.type === "tool_result" && callOrder.includes(b.tool_use_id) && !results.has(b.tool_use_id)) {
      results.set(b.tool_use_id, b)
    }
  }
  const ordered = callOrder.flatMap((id) => {
    const r = results.get(id)
    return r === undefined ? [] : [r]
  })
  return [...ordered, ...content.filter((b) => b.type !== "tool_result")]
}

const repairOnce = (drafts: ReadonlyArray<Draft>): Array<Draft> => {
  // Pairs are decided on the merged list before anything is removed, so both sides agree.
  const answeredBy = drafts.map((d, i) => {
    const results = toolResultIds(drafts[i + 1])
    return new Set(toolUseIds(d).filter((id) => results.has(id)))
  })
  return drafts.map((d, i): Draft => {
    if (d.role === "assistant") return { role: "assistant", content: keepAnswered(d.content, answeredBy[i] ?? new Set()) }
    const callOrder = i > 0 ? toolUseIds(drafts[i - 1]).filter((id) => answeredBy[i - 1]?.has(id)) : []
    return { role: "user", content: keepPaired(d.content, callOrder) }
  })
}

const sameShape = (a: ReadonlyArray<Draft>, b: ReadonlyArray<Draft>): boolean =>
  a.length === b.length && a.every((d, i) => d.role === b[i]?.role && d.content.length === b[i]?.content.length)

export const repairTurns = (drafts: ReadonlyArray<Draft>): Array<AnthropicInputMessage> => {
  let current = merge(drafts)
  // Removing a block can empty a turn and make two same-role turns adjacent, which can change
  // the pairing again; each round only removes, so this settles within a few rounds.
  for (let round = 0; round < 100; round++) {
    const next = merge(repairOnce(current))
    const settled = sameShape(next, current)
    current = next
    if (settled) break
  }
  const placeholder: Draft = { role: "user", content: [{ type: "text", text: PLACEHOLDER_USER_TEXT }] }
  if (current[0]?.role !== "user") current = [placeholder, ...current]
  return trimPrefill(current)
}

/**
 * A history ending in assistant text is a prefill to Anthropic, which rejects one ending in
 * whitespace; the trailing whitespace carries no meaning, so it goes.
 */
const trimPrefill = (messages: Array<Draft>): Array<Draft> => {
  const lastMessage = messages[messages.length - 1]
  if (lastMessage?.role !== "assistant") return messages
  const blocks = [...lastMessage.content]
  const tail = blocks[blocks.length - 1]
  if (tail?.type !== "text") return messages
  const text = tail.text.trimEnd()
  if (text === "") blocks.pop()
  else blocks[blocks.length - 1] = { type: "text", text }
  const rest = messages.slice(0, -1)
  return blocks.some((b) => b.type === "text" || b.type === "tool_use") ? [...rest, { role: "assistant", content: blocks }] : rest
}
