/**
 * A stream that outruns what its key may still spend: after each upstream read the relay asks
 * whether the answer's running cost (input as estimated, output as sent so far, and the delta
 * still arriving) passed the admission's budget (core/admittedTurn.ts), and if so ends it with
 * `insufficient_quota`, as a `response.failed` or an Anthropic `error` event. The settlement then
 * bills what was sent (an event cut while it arrived was not).
 */
import type { Budget } from "../../core/plan.js"
import { emptyUsage, type TokenUsage } from "../../domain/usage.js"
import type { EarlyEnd, OpenFrame } from "./sseRelay.js"

export const OUT_OF_BUDGET: EarlyEnd = {
  code: "insufficient_quota",
  message: "The response was ended: its cost reached what this key may still spend (balance, quota or subscription)"
}

/** About four characters a token, as the rough counts elsewhere (policy.ts). */
const tokensOf = (chars: number): number => Math.ceil(chars / 4)

const EVENT_LINE = /^event: ?(.*)\n/m
const TYPE = /"type"\s*:\s*"([^"]+)"/

/**
 * The bytes of a frame still arriving that count as output: all of them for a delta (its text is
 * most of its bytes) or a frame whose name has not come yet; none for other events, which repeat
 * the request or the output already counted (`response.created`, `*.done`, `response.completed`)
 * or carry images, which are not read as text.
 */
export const openOutputChars = (open: OpenFrame): number => {
  if (open.pendingBytes === 0) return 0
  const type = EVENT_LINE.exec(open.pendingHead)?.[1] ?? TYPE.exec(open.pendingHead)?.[1]
  return type === undefined || type.endsWith(".delta") || type === "content_block_delta" ? open.pendingBytes : 0
}

/**
 * The relay's `halt` for a stream under `budget` (none without one): `inputTokens` as estimated
 * before the call, `outputChars` the text, thinking and tool input sent so far, and the delta
 * still arriving (one giant event is cut while it comes, before it is relayed whole).
 */
export const budgetHalt = (
  budget: Budget | undefined,
  inputTokens: () => number,
  outputChars: () => number
): ((open: OpenFrame) => EarlyEnd | undefined) | undefined => {
  if (budget === undefined) return undefined
  let input: number | undefined
  return (open) => {
    input ??= inputTokens()
    const usage: TokenUsage = { ...emptyUsage, inputTokens: input, outputTokens: tokensOf(outputChars() + openOutputChars(open)) }
    return budget.exceeded(usage) ? OUT_OF_BUDGET : undefined
  }
}

/**
 * The characters of text an event carries: a Responses event's `delta` string, or an Anthropic
 * `content_block_delta`'s text, thinking or partial JSON.
 */
export const deltaChars = (event: Record<string, unknown>): number => {
  const delta = event["delta"]
  if (typeof delta === "string") return delta.length
  if (typeof delta !== "object" || delta === null) return 0
  const d = delta as Record<string, unknown>
  const text = d["text"] ?? d["thinking"] ?? d["partial_json"]
  return typeof text === "string" ? text.length : 0
}
