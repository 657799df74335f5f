/**
 * The part of @pydantic/genai-prices (MIT; a maintained catalogue of LLM API prices) the gateway
 * reads, in the package's own format: its first-party providers (Anthropic, OpenAI, Google), each
 * model's name matcher and its per-million-token text prices. The data itself is a snapshot
 * (genaiPrices.generated.ts, written by `npm run prices:update` from the pinned package; a test
 * fails when the two differ). pricing.ts turns it into integer prices once, at start.
 *
 * Only these price keys are kept: the gateway's usage has no audio, image-input, search or 1-hour
 * cache-write counts. A missing cache price means the package charges those tokens at the input
 * price (they are part of input_tokens), and so do we; a missing output price is 0.
 */

/** How a package model (or provider) recognises a model name; string tests ignore case, as the package's do. */
export type MatchLogic =
  | { readonly equals: string }
  | { readonly starts_with: string }
  | { readonly ends_with: string }
  | { readonly contains: string }
  | { readonly regex: string }
  | { readonly and: ReadonlyArray<MatchLogic> }
  | { readonly or: ReadonlyArray<MatchLogic> }

/**
 * USD per million tokens. Tiered: above `start` input tokens (cached ones included) the request's
 * tokens of this kind all cost `price` (long-context pricing); the snapshot holds at most one tier,
 * starting at the same count for every key of a model.
 */
export type PackagePrice = number | {
  readonly base: number
  readonly tiers: ReadonlyArray<{ readonly start: number; readonly price: number }>
}

export interface PackagePriceSet {
  readonly input_mtok?: PackagePrice
  readonly output_mtok?: PackagePrice
  readonly cache_read_mtok?: PackagePrice
  readonly cache_write_mtok?: PackagePrice
}

/** A price set that applies from a date on (the package's `start_date` constraint); the latest one started wins. */
export interface DatedPriceSet {
  readonly constraint?: { readonly type: "start_date"; readonly start_date: string }
  readonly prices: PackagePriceSet
}

export interface PackageModel {
  readonly id: string
  readonly match: MatchLogic
  readonly prices: PackagePriceSet | ReadonlyArray<DatedPriceSet>
}

export interface PackageProvider {
  readonly id: string
  /** Which model names the provider answers for (the package picks a provider by it). */
  readonly model_match: MatchLogic
  /** Providers whose models are searched next when none of this provider's matched. */
  readonly fallback_model_providers?: ReadonlyArray<string>
  readonly models: ReadonlyArray<PackageModel>
}

export interface PackageData {
  readonly package: string
  readonly version: string
  readonly providers: ReadonlyArray<PackageProvider>
}

/** A matcher compiled once (regexes built at start, not per request). */
export const compileMatch = (logic: MatchLogic): (name: string) => boolean => {
  if ("or" in logic) {
    const parts = logic.or.map(compileMatch)
    return (name) => parts.some((p) => p(name))
  }
  if ("and" in logic) {
    const parts = logic.and.map(compileMatch)
    return (name) => parts.every((p) => p(name))
  }
  if ("regex" in logic) {
    const re = new RegExp(logic.regex) // as the package: a regex is case-sensitive
    return (name) => re.test(name)
  }
  if ("equals" in logic) {
    const s = logic.equals.toLowerCase()
    return (name) => name.toLowerCase() === s
  }
  if ("starts_with" in logic) {
    const s = logic.starts_with.toLowerCase()
    return (name) => name.toLowerCase().startsWith(s)
  }
  if ("ends_with" in logic) {
    const s = logic.ends_with.toLowerCase()
    return (name) => name.toLowerCase().endsWith(s)
  }
  const s = logic.contains.toLowerCase()
  return (name) => name.toLowerCase().includes(s)
}

/** The model's prices at `at`: the latest dated set already started (as the package's calcPrice picks them). */
export const priceSetAt = (model: PackageModel, at: Date): PackagePriceSet => {
  if (!Array.isArray(model.prices)) return model.prices as PackagePriceSet
  const sets = model.prices as ReadonlyArray<DatedPriceSet>
  for (let i = sets.length - 1; i >= 0; i--) {
    const set = sets[i]!
    if (set.constraint === undefined || at.getTime() >= Date.parse(set.constraint.start_date)) return set.prices
  }
  return sets[0]?.prices ?? {}
}

// A dated snapshot name the package also tries in its dashed form: claude-x-20250929 -> claude-x-2025-09-29.
const COMPACT_DATE = /(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)/g

/** The name with compact dates dashed (the package's second try), or the name itself. */
export const dashedDates = (name: string): string =>
  name.replace(COMPACT_DATE, (whole, dash: string, y: string, m: string, d: string) => {
    const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
    return date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d) ? `${dash}${y}-${m}-${d}` : whole
  })
