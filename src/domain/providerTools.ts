/**
 * Provider tools: tools the upstream runs itself and bills per call on top of the tokens (web
 * search, file search, code interpreter / code execution, web fetch). A group allows them by name
 * (`allow_provider_tools`); each call an answer reports is priced from the per-call price table
 * (`tool_prices`, USD per 1000 calls, as the providers quote them). Pure.
 *
 * Names: one per kind of tool, whatever the wire format calls it (OpenAI's `web_search_preview`
 * and Anthropic's `web_search_20250305` are both `web_search`).
 */
import { Schema } from "effect"

export const ProviderTool = Schema.Literals(["web_search", "web_fetch", "file_search", "code_interpreter", "code_execution"])
export type ProviderTool = typeof ProviderTool.Type

export const providerToolNames: ReadonlyArray<ProviderTool> = ProviderTool.literals

/** The provider tools among `names` (a stored list): a name this version does not know is left out. */
export const knownProviderTools = (names: ReadonlyArray<string>): ReadonlyArray<ProviderTool> =>
  providerToolNames.filter((tool) => names.includes(tool))

/** Calls of each provider tool an answer reports; a tool absent made no call. */
export type ToolCalls = { readonly [T in ProviderTool]?: number }

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** ToolCalls as JSON (the settlement journal keeps them with the usage). */
export const ToolCallsSchema = Schema.Struct({
  web_search: Schema.optionalKey(Count),
  web_fetch: Schema.optionalKey(Count),
  file_search: Schema.optionalKey(Count),
  code_interpreter: Schema.optionalKey(Count),
  code_execution: Schema.optionalKey(Count)
})

/**
 * Per-call prices in integer pico-dollars (10^-12 USD) per call, so a call's price joins the token
 * prices' exact sum (domain/pricing.ts).
 */
export type ToolPrices = { readonly [T in ProviderTool]: bigint }

/**
 * What the providers charge per 1000 calls (USD), as the default of `tool_prices`: OpenAI's web
 * search, file search and code interpreter (a container session per call, $0.03), Anthropic's web
 * search ($10 per 1000). Anthropic's web fetch costs only its tokens. Anthropic's code execution is
 * billed by container time; a call is priced as an hour of it ($0.05), never less than it costs.
 */
export const defaultToolPricesUsd: { readonly [T in ProviderTool]: number } = {
  web_search: 10,
  web_fetch: 0,
  file_search: 2.5,
  code_interpreter: 30,
  code_execution: 50
}

/** USD per 1000 calls -> pico-dollars per call (10^-9 USD per 1000 calls resolution). */
export const picoPerCall = (usdPerThousand: number): bigint => BigInt(Math.round(usdPerThousand * 1_000_000_000))

export const toolPricesOf = (usd: { readonly [T in ProviderTool]?: number | undefined } = {}): ToolPrices => ({
  web_search: picoPerCall(usd.web_search ?? defaultToolPricesUsd.web_search),
  web_fetch: picoPerCall(usd.web_fetch ?? defaultToolPricesUsd.web_fetch),
  file_search: picoPerCall(usd.file_search ?? defaultToolPricesUsd.file_search),
  code_interpreter: picoPerCall(usd.code_interpreter ?? defaultToolPricesUsd.code_interpreter),
  code_execution: picoPerCall(usd.code_execution ?? defaultToolPricesUsd.code_execution)
})

export const defaultToolPrices: ToolPrices = toolPricesOf()

// ---------------------------------------------------------------------------------------------
// Requests: which provider tools a request gives the upstream
// ---------------------------------------------------------------------------------------------

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** An OpenAI Responses hosted tool's `type` (`web_search_preview_2025_03_11` ...) as a provider tool. */
export const responsesToolOf = (type: unknown): ProviderTool | undefined => {
  if (typeof type !== "string") return undefined
  if (type === "web_search" || type.startsWith("web_search_")) return "web_search"
  if (type === "file_search") return "file_search"
  if (type === "code_interpreter") return "code_interpreter"
  return undefined
}

/** An Anthropic server tool's versioned `type` (`web_search_20250305` ...) as a provider tool. */
export const messagesToolOf = (type: unknown): ProviderTool | undefined => {
  if (typeof type !== "string") return undefined
  if (type.startsWith("web_search_")) return "web_search"
  if (type.startsWith("web_fetch_")) return "web_fetch"
  if (type.startsWith("code_execution_")) return "code_execution"
  return undefined
}

/** The provider tools a request's `tools` array names, each once, in the order they come. */
export const providerToolsIn = (tools: unknown, toolOf: (type: unknown) => ProviderTool | undefined): ReadonlyArray<ProviderTool> => {
  if (!Array.isArray(tools)) return []
  const found: Array<ProviderTool> = []
  for (const tool of tools) {
    const named = isRecord(tool) ? toolOf(tool["type"]) : undefined
    if (named !== undefined && !found.includes(named)) found.push(named)
  }
  return found
}

/** The first of `wanted` the group does not allow; undefined when it allows them all. */
export const firstDenied = (
  allowed: ReadonlyArray<ProviderTool> | undefined,
  wanted: ReadonlyArray<ProviderTool>
): ProviderTool | undefined => wanted.find((tool) => !(allowed ?? []).includes(tool))

// ---------------------------------------------------------------------------------------------
// Answers: the calls an upstream reports
// ---------------------------------------------------------------------------------------------

const RESPONSES_CALL_ITEMS: Readonly<Record<string, ProviderTool>> = {
  web_search_call: "web_search",
  file_search_call: "file_search",
  code_interpreter_call: "code_interpreter"
}

/** The provider tool a Responses output item is a call of (`web_search_call` ...). */
export const responsesCallOf = (item: unknown): ProviderTool | undefined =>
  isRecord(item) && typeof item["type"] === "string" ? RESPONSES_CALL_ITEMS[item["type"]] : undefined

/** Whether a frame's text may hold a Responses call item: a cheap test before parsing it. */
export const mayHoldResponsesCall = (data: string): boolean =>
  data.includes("web_search_call") || data.includes("file_search_call") || data.includes("code_interpreter_call")

const add = (calls: ToolCalls, tool: ProviderTool, n: number): ToolCalls => ({ ...calls, [tool]: (calls[tool] ?? 0) + n })

/** The calls among a Responses answer's `output` items (JSON answers, `response.completed`). */
export const responsesToolCalls = (output: unknown): ToolCalls => {
  let calls: ToolCalls = {}
  if (!Array.isArray(output)) return calls
  for (const item of output) {
    const tool = responsesCallOf(item)
    if (tool !== undefined) calls = add(calls, tool, 1)
  }
  return calls
}

/** `calls` with one more call of `tool`. */
export const withCall = (calls: ToolCalls, tool: ProviderTool): ToolCalls => add(calls, tool, 1)

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined)

/**
 * Anthropic's `usage.server_tool_use` (cumulative counts, like its token counts) folded over
 * `prev`: a count present overwrites, an absent one keeps its value. It counts web searches and
 * fetches, not code execution calls: those are counted from the answer's blocks (`messagesCallOf`).
 */
export const foldServerToolUse = (prev: ToolCalls | undefined, u: unknown): ToolCalls | undefined => {
  if (!isRecord(u)) return prev
  let calls: ToolCalls = prev ?? {}
  const search = count(u["web_search_requests"])
  const fetch = count(u["web_fetch_requests"])
  if (search !== undefined) calls = { ...calls, web_search: search }
  if (fetch !== undefined) calls = { ...calls, web_fetch: fetch }
  return calls
}

/**
 * The provider tool an Anthropic content block is a call of: a `server_tool_use` block of web
 * search, web fetch or code execution (`code_execution`, `bash_code_execution`,
 * `text_editor_code_execution`). Counting the blocks covers what `usage.server_tool_use` does not
 * (code execution; the calls of a stream cut before its usage came).
 */
export const messagesCallOf = (block: unknown): ProviderTool | undefined => {
  if (!isRecord(block) || block["type"] !== "server_tool_use" || typeof block["name"] !== "string") return undefined
  const name = block["name"]
  if (name === "web_search") return "web_search"
  if (name === "web_fetch") return "web_fetch"
  return name.endsWith("code_execution") ? "code_execution" : undefined
}

/** The provider tool calls among an Anthropic message's `content` blocks. */
export const messagesToolCalls = (content: unknown): ToolCalls => {
  let calls: ToolCalls = {}
  if (!Array.isArray(content)) return calls
  for (const block of content) {
    const tool = messagesCallOf(block)
    if (tool !== undefined) calls = add(calls, tool, 1)
  }
  return calls
}

/** Each tool's larger count of two readings of the same answer (its items as they came, and its final output). */
export const mostCalls = (a: ToolCalls | undefined, b: ToolCalls | undefined): ToolCalls | undefined => {
  if (a === undefined) return b
  if (b === undefined) return a
  const out: { [T in ProviderTool]?: number } = {}
  for (const tool of providerToolNames) {
    const n = Math.max(a[tool] ?? 0, b[tool] ?? 0)
    if (n > 0) out[tool] = n
  }
  return out
}

/** Whether any call was made. */
export const anyCalls = (calls: ToolCalls | undefined): calls is ToolCalls =>
  calls !== undefined && providerToolNames.some((tool) => (calls[tool] ?? 0) > 0)
