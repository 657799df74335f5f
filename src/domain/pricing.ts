/**
 * Prices in USD per million tokens. With that unit, tokens x price is micro-dollars, so a request's
 * cost is one rounding of an exact product sum.
 *
 * Exactness: each price is held as an integer number of pico-dollars per token (USD per million
 * tokens x 10^6, so prices resolve to 10^-6 USD per million tokens) and the group's rate multiplier
 * as parts per million. The sum of products is a BigInt; the only rounding is the final one to
 * micro-dollars (half up). No binary fraction ever enters a stored figure.
 */
import type { Micros } from "./model.js"
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

/** The bundled table for the default models; config `prices` override it. */
export const bundledPrices: PriceTable = [
  { model: "claude-opus*", price: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 } },
  { model: "claude-sonnet*", price: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
  { model: "claude-haiku*", price: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 } },
  { model: "gpt-5.5*", price: { input: 2.5, output: 20, cacheRead: 0.25, cacheWrite: 2.5 } },
  { model: "gpt-5.4-mini*", price: { input: 0.25, output: 2, cacheRead: 0.025, cacheWrite: 0.25 } },
  { model: "gpt-5*", price: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 1.25 } },
  { model: "gpt-image*", price: { input: 5, output: 40, cacheRead: 1.25, cacheWrite: 5 } },
  { model: "gemini*", price: { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 1.25 } }
]

/** Unknown models are priced like a mid-range model rather than free: a gateway must not give away service. */
export const fallbackPrice: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }

const isPrefix = (pattern: string) => pattern.endsWith("*")

/** Exact name first, then the longest matching prefix; undefined when nothing matches. */
const lookup = (table: PriceTable, model: string): ModelPrice | undefined => {
  let best: PriceRule | undefined
  for (const rule of table) {
    if (!isPrefix(rule.model)) {
      if (rule.model === model) return rule.price
      continue
    }
    const prefix = rule.model.slice(0, -1)
    if (model.startsWith(prefix) && (best === undefined || prefix.length > best.model.length - 1)) best = rule
  }
  return best?.price
}

/** Config overrides win over the bundled table, which wins over the fallback. */
export const priceFor = (model: string, overrides: PriceTable = []): ModelPrice =>
  lookup(overrides, model) ?? lookup(bundledPrices, model) ?? fallbackPrice

/** USD per million tokens -> integer pico-dollars per token (10^-6 USD per million tokens resolution). */
export const picoPerToken = (usdPerMillion: number): bigint => BigInt(Math.round(usdPerMillion * 1_000_000))

/** A decimal multiplier as integer parts per million. */
export const ppm = (multiplier: number): bigint => BigInt(Math.round(multiplier * 1_000_000))

const PICO_PPM_PER_MICRO = 1_000_000_000_000n

// Token counts come from upstream JSON; BigInt() would throw on a fraction or NaN.
const tokens = (n: number): bigint => BigInt(Number.isFinite(n) && n > 0 ? Math.floor(n) : 0)

export const costMicros = (
  model: string,
  usage: TokenUsage,
  rateMultiplier: number,
  overrides: PriceTable = []
): Micros => {
  const p = priceFor(model, overrides)
  // inputTokens includes cached reads and writes (see usage.ts); only the rest pays the input price.
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheCreationTokens)
  const pico = tokens(uncached) * picoPerToken(p.input) +
    tokens(usage.cacheReadTokens) * picoPerToken(p.cacheRead) +
    tokens(usage.cacheCreationTokens) * picoPerToken(p.cacheWrite) +
    tokens(usage.outputTokens) * picoPerToken(p.output)
  const scaled = pico * ppm(rateMultiplier)
  // Costs are never negative, so half-up is (x + half) / unit.
  return Number((scaled + PICO_PPM_PER_MICRO / 2n) / PICO_PPM_PER_MICRO)
}
