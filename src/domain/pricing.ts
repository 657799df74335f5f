/**
 * Prices in USD per million tokens. With that unit, tokens x price is micro-dollars, so a request's
 * cost is one rounding of an exact product sum.
 *
 * Exactness: each price is held as an integer number of pico-dollars per token (USD per million
 * tokens x 10^6, so prices resolve to 10^-6 USD per million tokens) and the group's rate multiplier
 * as parts per million. The sum of products is a BigInt; the only rounding is the final one to
 * micro-dollars (half up). No binary fraction ever enters a stored figure.
 *
 * Where a price comes from, first match wins:
 * 1. an override: the config's `prices` and the operator's (admin API), an exact name, else the longest prefix;
 * 2. the price package (@pydantic/genai-prices, a snapshot in genaiPrices.generated.ts), turned into
 *    integer prices once, when this module loads;
 * 3. the fallback price, a mid-range model's: never free. Such a charge is flagged (`priceFallback`),
 *    stored with the usage event and counted in `modelgate_unpriced_requests_total`.
 *
 * Calls of provider tools (web search ...) are priced per call (domain/providerTools.ts, the
 * config's `tool_prices`), in the same exact sum.
 */
import { genaiPrices } from "./genaiPrices.generated.js"
import type { Micros } from "./model.js"
import { compileMatch, dashedDates, type PackageData, type PackagePrice, type PackagePriceSet, priceSetAt } from "./packagePrices.js"
import { defaultToolPrices, providerToolNames, type ToolCalls, type ToolPrices } from "./providerTools.js"
import type { TokenUsage } from "./usage.js"

export interface ModelPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
}

/** A price for an exact model name, or for every model starting with a prefix (`gpt-5*`). */
export interface PriceRule {
  readonly model: string
  readonly price: ModelPrice
}

export type PriceTable = ReadonlyArray<PriceRule>

/** Unknown models are priced like a mid-range model rather than free: a gateway must not give away service. */
export const fallbackPrice: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }

/** USD per million tokens -> integer pico-dollars per token (10^-6 USD per million tokens resolution). */
export const picoPerToken = (usdPerMillion: number): bigint => BigInt(Math.round(usdPerMillion * 1_000_000))

/** A decimal multiplier as integer parts per million. */
export const ppm = (multiplier: number): bigint => BigInt(Math.round(multiplier * 1_000_000))

/** A price as the arithmetic uses it: integer pico-dollars per token. */
export interface Rate {
  readonly input: bigint
  readonly output: bigint
  readonly cacheRead: bigint
  readonly cacheWrite: bigint
}

export const rateOf = (p: ModelPrice): Rate => ({
  input: picoPerToken(p.input),
  output: picoPerToken(p.output),
  cacheRead: picoPerToken(p.cacheRead),
  cacheWrite: picoPerToken(p.cacheWrite)
})

export type PriceSource = "override" | "package" | "fallback"

/** The price a model's request is charged at, and where it came from. */
export interface Quote {
  readonly source: PriceSource
  /** The override's rule (`gpt-5*`), the package's model id, or `fallback`. */
  readonly name: string
  readonly rate: Rate
  /**
   * Long-context pricing (the package's tiers): a request with more input tokens than this (cached
   * ones included) pays `rate` for all its tokens.
   */
  readonly above?: { readonly inputTokens: number; readonly rate: Rate }
}

const fallbackQuote: Quote = { source: "fallback", name: "fallback", rate: rateOf(fallbackPrice) }

const isPrefix = (pattern: string) => pattern.endsWith("*")

/** Exact name first, then the longest matching prefix; undefined when nothing matches. */
const lookup = (table: PriceTable, model: string): PriceRule | undefined => {
  let best: PriceRule | undefined
  for (const rule of table) {
    if (!isPrefix(rule.model)) {
      if (rule.model === model) return rule
      continue
    }
    const prefix = rule.model.slice(0, -1)
    if (model.startsWith(prefix) && (best === undefined || prefix.length > best.model.length - 1)) best = rule
  }
  return best
}

// Rules are reloaded as new objects when an operator changes a price: their quotes go with them.
const ruleQuotes = new WeakMap<PriceRule, Quote>()
const quoteOfRule = (rule: PriceRule): Quote => {
  let quote = ruleQuotes.get(rule)
  if (quote === undefined) {
    quote = { source: "override", name: rule.model, rate: rateOf(rule.price) }
    ruleQuotes.set(rule, quote)
  }
  return quote
}

/** The package's prices, as integers, with a lookup by model name. */
export interface PackagePrices {
  readonly package: string
  readonly version: string
  /** How many of the package's models have a text-token price. */
  readonly models: number
  /** The package's price for a model name; undefined when it does not price that name. */
  readonly find: (model: string) => Quote | undefined
}

const base = (p: PackagePrice): number => (typeof p === "number" ? p : p.base)
const tier = (p: PackagePrice): number => (typeof p === "number" ? p : p.tiers[0]?.price ?? p.base)
const tierStart = (set: PackagePriceSet): number | undefined => {
  for (const p of [set.input_mtok, set.output_mtok, set.cache_read_mtok, set.cache_write_mtok]) {
    if (p !== undefined && typeof p !== "number" && p.tiers[0] !== undefined) return p.tiers[0].start
  }
  return undefined
}

/** A package price set as a quote; undefined without an input price (audio-only or unpriced models). */
const quoteOfSet = (id: string, set: PackagePriceSet): Quote | undefined => {
  const input = set.input_mtok
  if (input === undefined) return undefined
  // A missing cache price: the package charges those tokens (part of input_tokens) at the input price.
  const price = (pick: (p: PackagePrice) => number): ModelPrice => ({
    input: pick(input),
    output: set.output_mtok === undefined ? 0 : pick(set.output_mtok),
    cacheRead: pick(set.cache_read_mtok ?? input),
    cacheWrite: pick(set.cache_write_mtok ?? input)
  })
  const start = tierStart(set)
  return start === undefined
    ? { source: "package", name: id, rate: rateOf(price(base)) }
    : { source: "package", name: id, rate: rateOf(price(base)), above: { inputTokens: start, rate: rateOf(price(tier)) } }
}

interface CompiledModel {
  readonly matches: (name: string) => boolean
  readonly quote: Quote | undefined
}

interface CompiledProvider {
  readonly id: string
  readonly matches: (name: string) => boolean
  readonly models: ReadonlyArray<CompiledModel>
  readonly fallbacks: ReadonlyArray<string>
}

// Names are the client's: only short ones are remembered, and only so many.
const MEMO_LIMIT = 4096
const MEMO_NAME_LIMIT = 256

/**
 * The package's data at `at` (dated price changes resolved then), compiled: matchers built and
 * prices turned into integers once. A name is looked up as the package's calcPrice does it: the
 * first provider whose `model_match` takes the name, the first of its models whose `match` does,
 * then its fallback providers' models; then all of that again with compact dates dashed
 * (`-20250929` -> `-2025-09-29`). Answers are remembered per name.
 */
export const packagePricesOf = (data: PackageData, at: Date): PackagePrices => {
  const providers: ReadonlyArray<CompiledProvider> = data.providers.map((p) => ({
    id: p.id,
    matches: compileMatch(p.model_match),
    models: p.models.map((m) => ({ matches: compileMatch(m.match), quote: quoteOfSet(m.id, priceSetAt(m, at)) })),
    fallbacks: p.fallback_model_providers ?? []
  }))
  const inModels = (models: ReadonlyArray<CompiledModel>, name: string): CompiledModel | undefined => {
    for (const m of models) if (m.matches(name)) return m
    return undefined
  }
  const search = (name: string): Quote | undefined => {
    const provider = providers.find((p) => p.matches(name))
    if (provider === undefined) return undefined
    let hit = inModels(provider.models, name)
    for (const id of provider.fallbacks) {
      if (hit !== undefined) break
      const other = providers.find((p) => p.id === id)
      if (other !== undefined) hit = inModels(other.models, name)
    }
    return hit?.quote
  }
  const memo = new Map<string, Quote | null>()
  return {
    package: data.package,
    version: data.version,
    models: providers.reduce((n, p) => n + p.models.filter((m) => m.quote !== undefined).length, 0),
    find: (model) => {
      const known = memo.get(model)
      if (known !== undefined) return known ?? undefined
      const dashed = dashedDates(model)
      const found = search(model) ?? (dashed === model ? undefined : search(dashed))
      if (memo.size < MEMO_LIMIT && model.length <= MEMO_NAME_LIMIT) memo.set(model, found ?? null)
      return found
    }
  }
}

/** The package's prices, built once when the gateway starts (this module loads). */
export const packagePrices: PackagePrices = packagePricesOf(genaiPrices, new Date())

/** Overrides win over the package, which wins over the fallback. */
export const quoteFor = (model: string, overrides: PriceTable = [], pkg: PackagePrices = packagePrices): Quote => {
  const rule = lookup(overrides, model)
  return rule !== undefined ? quoteOfRule(rule) : pkg.find(model) ?? fallbackQuote
}

const PICO_PPM_PER_MICRO = 1_000_000_000_000n

// Token counts come from upstream JSON; BigInt() would throw on a fraction or NaN.
const tokens = (n: number): bigint => BigInt(Number.isFinite(n) && n > 0 ? Math.floor(n) : 0)

/** What one request costs, and whether its price was the fallback (no override, not in the package). */
export interface Charge {
  readonly cost: Micros
  readonly priceFallback: boolean
}

/** The calls' price at `prices`, in pico-dollars. */
const toolsPico = (calls: ToolCalls | undefined, prices: ToolPrices): bigint => {
  if (calls === undefined) return 0n
  let pico = 0n
  for (const tool of providerToolNames) pico += tokens(calls[tool] ?? 0) * prices[tool]
  return pico
}

/**
 * What `usage` of `model` costs: its tokens at the model's price, and the calls of provider tools
 * (web search ...) at `tools`' per-call prices, scaled by the group's multiplier, rounded once.
 */
export const charge = (
  model: string,
  usage: TokenUsage,
  rateMultiplier: number,
  overrides: PriceTable = [],
  pkg: PackagePrices = packagePrices,
  tools: ToolPrices = defaultToolPrices
): Charge => {
  const quote = quoteFor(model, overrides, pkg)
  const p = quote.above !== undefined && usage.inputTokens > quote.above.inputTokens ? quote.above.rate : quote.rate
  // inputTokens includes cached reads and writes (see usage.ts); only the rest pays the input price.
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheCreationTokens)
  const pico = tokens(uncached) * p.input +
    tokens(usage.cacheReadTokens) * p.cacheRead +
    tokens(usage.cacheCreationTokens) * p.cacheWrite +
    tokens(usage.outputTokens) * p.output +
    toolsPico(usage.toolCalls, tools)
  const scaled = pico * ppm(rateMultiplier)
  // Costs are never negative, so half-up is (x + half) / unit.
  return { cost: Number((scaled + PICO_PPM_PER_MICRO / 2n) / PICO_PPM_PER_MICRO), priceFallback: quote.source === "fallback" }
}

export const costMicros = (
  model: string,
  usage: TokenUsage,
  rateMultiplier: number,
  overrides: PriceTable = [],
  pkg: PackagePrices = packagePrices,
  tools: ToolPrices = defaultToolPrices
): Micros => charge(model, usage, rateMultiplier, overrides, pkg, tools).cost
