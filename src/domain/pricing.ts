/**
 * Prices in USD per million tokens. With that unit, tokens x price is micro-dollars, so a request's
 * cost is one rounding of an exact product sum.
 */
import type { Micros } from "./model.js"
import type { TokenUsage } from "./usage.js"

export interface ModelPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
}

const table: ReadonlyArray<readonly [prefix: string, price: ModelPrice]> = [
  ["claude-opus", { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 }],
  ["claude-sonnet", { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }],
  ["claude-haiku", { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 }],
  ["gpt-5.5", { input: 2.5, output: 20, cacheRead: 0.25, cacheWrite: 2.5 }],
  ["gpt-5.4-mini", { input: 0.25, output: 2, cacheRead: 0.025, cacheWrite: 0.25 }],
  ["gpt-5", { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 1.25 }],
  ["gpt-image", { input: 5, output: 40, cacheRead: 1.25, cacheWrite: 5 }],
  ["gemini", { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 1.25 }]
]

/** Unknown models are priced like a mid-range model rather than free: a gateway must not give away service. */
export const fallbackPrice: ModelPrice = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }

export const priceFor = (model: string): ModelPrice =>
  table.find(([prefix]) => model.startsWith(prefix))?.[1] ?? fallbackPrice

export const costMicros = (model: string, usage: TokenUsage, rateMultiplier: number): Micros => {
  const p = priceFor(model)
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheCreationTokens)
  const raw = uncached * p.input + usage.cacheReadTokens * p.cacheRead +
    usage.cacheCreationTokens * p.cacheWrite + usage.outputTokens * p.output
  return Math.round(raw * rateMultiplier)
}
