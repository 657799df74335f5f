/**
 * A client's Responses request -> the Anthropic Messages request for the same turn.
 * Pure: the caller has parsed the JSON and checked `model` and `stream`.
 */
import { Result } from "effect"
import { placeBreakpoints } from "./cache.js"
import { isRecord, reject, TranslationError } from "./error.js"
import { readHistory } from "./history.js"
import { PLACEHOLDER_USER_TEXT, repairTurns } from "./pairing.js"
import { selectTools, translateTools } from "./tools.js"
import type { AnthropicInputMessage, AnthropicToolChoice, MessagesRequest, TextBlock } from "./types.js"

export { TranslationError } from "./error.js"

export interface TranslateOptions {
  /** Model name to send upstream (after account mapping). */
  readonly upstreamModel: string
  /** Overrides the per-model default `max_tokens` used when the client sends no max_output_tokens. */
  readonly defaultMaxTokens?: number
}

/** Thinking budgets per `reasoning.effort`; none/minimal mean no thinking. */
const BUDGETS: Readonly<Record<string, number | undefined>> = {
  none: undefined,
  minimal: undefined,
  low: 1024,
  medium: 4096,
  high: 10240,
  xhigh: 32768,
  max: 32768
}
const MIN_BUDGET = 1024

/**
 * `max_tokens` when the client sends none (Codex never does): the model's maximum output, so long
 * answers and thinking both fit. Above the model's maximum Anthropic answers 400.
 */
export const defaultMaxTokensFor = (model: string): number => {
  const m = model.toLowerCase()
  if (/claude-3-haiku|claude-3-opus/.test(m)) return 4096
  if (/claude-3-5-(sonnet|haiku)|claude-3-sonnet/.test(m)) return 8192
  if (/claude-3-7-sonnet/.test(m)) return 64000
  if (/claude-(opus-4-0|opus-4-1|opus-4(?![-.]?\d)|4-opus|opus-4-2025)/.test(m)) return 32000
  if (/claude-(sonnet|haiku|opus)-4/.test(m) || /claude-4/.test(m)) return 64000
  return 32000
}

const JSON_OBJECT_INSTRUCTION =
  "Respond with a single valid JSON object only: no prose, no code fences, nothing before or after it."

const positiveInt = (v: unknown, param: string): number | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== "number" || !Number.isFinite(v) || v < 1) return reject(`${param} must be a positive integer`, param)
  return Math.floor(v)
}

const budgetFor = (reasoning: unknown): number | undefined => {
  if (!isRecord(reasoning)) return undefined
  const effort = reasoning["effort"]
  if (effort === undefined || effort === null) return undefined
  if (typeof effort !== "string" || !(effort in BUDGETS)) {
    return reject(`Unsupported reasoning.effort '${String(effort)}'`, "reasoning.effort")
  }
  return BUDGETS[effort]
}

/**
 * Histories Anthropic refuses to combine with thinking: a tool loop in progress whose tool turn has
 * no thinking block (the client dropped it, or it came from another backend), and a prefill.
 */
const cannotThink = (messages: ReadonlyArray<AnthropicInputMessage>): boolean => {
  const last = messages[messages.length - 1]
  const prev = messages[messages.length - 2]
  if (last?.role === "assistant") return true
  if (last?.role !== "user" || !last.content.some((b) => b.type === "tool_result")) return false
  const first = prev?.role === "assistant" ? prev.content[0] : undefined
  return first?.type !== "thinking" && first?.type !== "redacted_thinking"
}

/**
 * The thinking budget to use, or undefined for no thinking. Thinking yields when the client forces a
 * tool (Anthropic refuses forced tools with thinking, and the forced call is the harder requirement)
 * and when `max_tokens` leaves no room for an answer after the budget.
 */
const chooseBudget = (
  requested: number | undefined,
  maxTokens: number,
  choice: AnthropicToolChoice | undefined,
  messages: ReadonlyArray<AnthropicInputMessage>
): number | undefined => {
  if (requested === undefined) return undefined
  if (choice?.type === "any" || choice?.type === "tool") return undefined
  if (cannotThink(messages)) return undefined
  const budget = requested < maxTokens ? requested : maxTokens - Math.max(MIN_BUDGET, Math.floor(maxTokens / 4))
  return budget >= MIN_BUDGET ? budget : undefined
}

const outputFormat = (text: unknown): { readonly schema?: Record<string, unknown>; readonly jsonObject: boolean } => {
  if (!isRecord(text) || !isRecord(text["format"])) return { jsonObject: false }
  const format = text["format"]
  if (format["type"] === "json_object") return { jsonObject: true }
  if (format["type"] === "json_schema") {
    const schema = format["schema"]
    if (!isRecord(schema)) return reject("text.format.schema must be a JSON Schema object", "text.format.schema")
    return { schema, jsonObject: false }
  }
  return { jsonObject: false }
}

/** State features need a response store we do not keep: say so instead of answering without context. */
const rejectStatefulFields = (body: Record<string, unknown>): void => {
  if (body["conversation"] !== undefined && body["conversation"] !== null) {
    reject("conversation is not supported by this gateway; send the full conversation history in input", "conversation")
  }
  if (body["prompt"] !== undefined && body["prompt"] !== null) {
    reject("Stored prompt templates (prompt) are not supported by this gateway; send instructions and input instead", "prompt")
  }
}

const translate = (body: Record<string, unknown>, options: TranslateOptions): MessagesRequest => {
  rejectStatefulFields(body)
  const history = readHistory(body["input"])
  const format = outputFormat(body["text"])
  const instructions = typeof body["instructions"] === "string" && body["instructions"] !== "" ? [body["instructions"]] : []
  const systemTexts = [...instructions, ...history.system, ...(format.jsonObject ? [JSON_OBJECT_INSTRUCTION] : [])]
  const system: ReadonlyArray<TextBlock> = systemTexts.map((text) => ({ type: "text", text }))

  let messages = repairTurns(history.drafts)
  if (!messages.some((m) => m.role === "user")) {
    messages = [{ role: "user", content: [{ type: "text", text: PLACEHOLDER_USER_TEXT }] }]
  }

  const { tools, choice } = selectTools(translateTools(body["tools"]), body["tool_choice"], body["parallel_tool_calls"])
  const maxTokens = positiveInt(body["max_output_tokens"], "max_output_tokens") ??
    options.defaultMaxTokens ?? defaultMaxTokensFor(options.upstreamModel)
  const budget = chooseBudget(budgetFor(body["reasoning"]), maxTokens, choice, messages)

  // Anthropic's temperature range is 0..1 (OpenAI's 0..2), thinking forbids sampling settings,
  // and newer models refuse temperature and top_p together: send at most one, temperature first.
  const temperature = typeof body["temperature"] === "number" ? Math.min(Math.max(body["temperature"], 0), 1) : undefined
  const topP = typeof body["top_p"] === "number" ? body["top_p"] : undefined
  const sampling = budget !== undefined
    ? {}
    : temperature !== undefined
    ? { temperature }
    : topP !== undefined
    ? { top_p: topP }
    : {}

  const user = typeof body["safety_identifier"] === "string" ? body["safety_identifier"] : body["user"]

  return placeBreakpoints({
    model: options.upstreamModel,
    max_tokens: maxTokens,
    ...(system.length > 0 ? { system } : {}),
    messages,
    stream: body["stream"] === true,
    ...sampling,
    ...(tools.length > 0 ? { tools } : {}),
    ...(choice !== undefined ? { tool_choice: choice } : {}),
    ...(budget !== undefined ? { thinking: { type: "enabled", budget_tokens: budget } } : {}),
    ...(format.schema !== undefined ? { output_config: { format: { type: "json_schema", schema: format.schema } } } : {}),
    ...(typeof user === "string" && user !== "" ? { metadata: { user_id: user } } : {})
  })
}

export const responsesToMessages = (
  body: Record<string, unknown>,
  options: TranslateOptions
): Result.Result<MessagesRequest, TranslationError> => {
  try {
    return Result.succeed(translate(body, options))
  } catch (e) {
    if (e instanceof TranslationError) return Result.fail(e)
    throw e
  }
}
