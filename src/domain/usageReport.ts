/**
 * The /v1/usage body, built from a storage-neutral snapshot. Pure: the Quota service supplies the
 * figures, this decides the shape (spec fields plus what CC Switch-style clients read).
 */
import type { ApiKey, Group, Micros } from "./model.js"
import { microsToUsd } from "./model.js"
import { hasLimit, type SubscriptionFigures, usedIn, type Window, windows } from "./subscription.js"

export interface UsageTotals {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheCreationTokens: number
  readonly costMicros: Micros
}

export const zeroTotals: UsageTotals = {
  requests: 0,
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
  costMicros: 0
}

export const addTotals = (a: UsageTotals, b: UsageTotals): UsageTotals => ({
  requests: a.requests + b.requests,
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
  cacheCreationTokens: a.cacheCreationTokens + b.cacheCreationTokens,
  costMicros: a.costMicros + b.costMicros
})

export interface UsageSnapshot {
  readonly key: ApiKey
  readonly group: Group
  readonly quotaUsedMicros: Micros
  readonly balanceMicros: Micros
  readonly today: UsageTotals
  readonly total: UsageTotals
  readonly byModel: ReadonlyArray<{ readonly model: string; readonly totals: UsageTotals }>
  /** The range's days that had usage, oldest first. */
  readonly byDay: ReadonlyArray<{ readonly day: string; readonly totals: UsageTotals }>
  /** Subscription groups: the caller's subscription, when there is one. */
  readonly subscription?: SubscriptionFigures | undefined
}

/** At most this many models are listed one by one in `model_stats`; the rest are summed as `other`. */
export const MODEL_STATS_LIMIT = 50

/**
 * The per-model rows, busiest first: a key that invents model names (each one its own row in the
 * store) cannot make the report grow without bound; what is past the limit is one `other` row.
 */
const boundedByModel = (
  rows: ReadonlyArray<{ readonly model: string; readonly totals: UsageTotals }>
): ReadonlyArray<{ readonly model: string; readonly totals: UsageTotals }> => {
  const sorted = [...rows].sort((a, b) =>
    (b.totals.inputTokens + b.totals.outputTokens) - (a.totals.inputTokens + a.totals.outputTokens) ||
    a.model.localeCompare(b.model)
  )
  if (sorted.length <= MODEL_STATS_LIMIT) return sorted
  const rest = sorted.slice(MODEL_STATS_LIMIT - 1).reduce((sum, row) => addTotals(sum, row.totals), zeroTotals)
  return [...sorted.slice(0, MODEL_STATS_LIMIT - 1), { model: "other", totals: rest }]
}

export type KeyUsageStatus = "active" | "expired" | "quota_exhausted"

export const keyUsageStatus = (s: UsageSnapshot, now: Date): KeyUsageStatus => {
  if (s.key.status === "expired" || (s.key.expiresAt !== undefined && s.key.expiresAt.getTime() <= now.getTime())) {
    return "expired"
  }
  if (
    s.key.status === "quota_exhausted" ||
    (s.key.quotaMicros !== undefined && s.key.quotaMicros > 0 && s.quotaUsedMicros >= s.key.quotaMicros)
  ) return "quota_exhausted"
  return "active"
}

// Token totals in the wire form; `total_tokens` counts every token the key was billed for.
// inputTokens already includes cached reads and writes (OpenAI meaning).
const wireTotals = (t: UsageTotals) => ({
  requests: t.requests,
  input_tokens: t.inputTokens,
  output_tokens: t.outputTokens,
  cache_read_tokens: t.cacheReadTokens,
  cache_creation_tokens: t.cacheCreationTokens,
  total_tokens: t.inputTokens + t.outputTokens,
  cost: microsToUsd(t.costMicros)
})

export const usageReport = (s: UsageSnapshot, now: Date) => {
  const status = keyUsageStatus(s, now)
  const hasQuota = s.key.quotaMicros !== undefined && s.key.quotaMicros > 0
  const common = {
    status,
    isValid: status === "active",
    ...(s.key.expiresAt !== undefined ? { expires_at: s.key.expiresAt.toISOString() } : {}),
    usage: { today: wireTotals(s.today), total: wireTotals(s.total) },
    // Always an array (empty when the range has no usage): clients iterate it without a check.
    model_stats: boundedByModel(s.byModel).map(({ model, totals }) => {
      const { cache_creation_tokens: _c, cache_read_tokens: _r, ...rest } = wireTotals(totals)
      return { model, ...rest }
    }),
    // The range's days that had usage, oldest first (the dashboard's chart); an extension like the rest.
    daily_stats: s.byDay.map(({ day, totals }) => {
      const { cache_creation_tokens: _c, cache_read_tokens: _r, ...rest } = wireTotals(totals)
      return { date: day, ...rest }
    })
  }
  if (hasQuota) {
    const limit = microsToUsd(s.key.quotaMicros!)
    const used = microsToUsd(s.quotaUsedMicros)
    const remaining = microsToUsd(Math.max(0, s.key.quotaMicros! - s.quotaUsedMicros))
    return {
      mode: "quota_limited" as const,
      ...common,
      quota: { limit, used, remaining, unit: "USD" },
      remaining,
      unit: "USD"
    }
  }
  if (s.group.billing === "subscription") {
    return { mode: "unrestricted" as const, ...common, planName: s.group.name, ...subscriptionPart(s.subscription, now) }
  }
  const balance = microsToUsd(s.balanceMicros)
  return {
    mode: "unrestricted" as const,
    ...common,
    planName: "Wallet balance",
    remaining: balance,
    unit: "USD",
    balance
  }
}

/**
 * A subscription's windows as CC Switch reads them. `remaining` is the least left in any limited
 * window (0 once one is used up), or -1 when no window has a limit.
 */
const subscriptionPart = (sub: SubscriptionFigures | undefined, now: Date) => {
  if (sub === undefined) return { remaining: 0, unit: "USD" }
  const used = (w: Window) => usedIn(w, sub.spends, now.getTime())
  const left = windows.flatMap((w) => {
    const limit = sub.limits[w]
    return hasLimit(limit) ? [Math.max(0, limit - used(w))] : []
  })
  const limitUsd = (w: Window) => {
    const limit = sub.limits[w]
    return hasLimit(limit) ? microsToUsd(limit) : null
  }
  // The status the responses path acts on: an expiry date in the past is expired, whatever was stored.
  const { expiresAt, status: stored } = sub.subscription
  const status = stored === "expired" || (expiresAt !== undefined && expiresAt.getTime() <= now.getTime()) ? "expired" : stored
  return {
    // Nothing is left to spend on a subscription the responses path refuses.
    remaining: status !== "active" ? 0 : left.length === 0 ? -1 : microsToUsd(Math.min(...left)),
    unit: "USD",
    subscription: {
      status,
      daily_usage_usd: microsToUsd(used("daily")),
      weekly_usage_usd: microsToUsd(used("weekly")),
      monthly_usage_usd: microsToUsd(used("monthly")),
      daily_limit_usd: limitUsd("daily"),
      weekly_limit_usd: limitUsd("weekly"),
      monthly_limit_usd: limitUsd("monthly"),
      expires_at: sub.subscription.expiresAt?.toISOString() ?? null
    }
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/

/** A YYYY-MM-DD day that exists on the calendar, else undefined. */
export const parseDay = (s: string): string | undefined => {
  if (!DATE.test(s)) return undefined
  const d = new Date(`${s}T00:00:00Z`)
  return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? undefined : s
}

const MS_PER_DAY = 86_400_000
let lastDay = Number.NaN
let lastDayText = ""

/**
 * The UTC day of `d` (`YYYY-MM-DD`). Every settlement asks twice, nearly always for the same day as
 * the one before, so the last answer is kept: UTC days are whole multiples of a day since the epoch.
 */
export const dayOf = (d: Date): string => {
  const day = Math.floor(d.getTime() / MS_PER_DAY)
  if (day !== lastDay) {
    lastDayText = d.toISOString().slice(0, 10)
    lastDay = day
  }
  return lastDayText
}

export const addDays = (day: string, n: number): string =>
  dayOf(new Date(new Date(`${day}T00:00:00Z`).getTime() + n * 86_400_000))

/** Reports without a start_date cover this many days up to their end (today by default). */
export const DEFAULT_RANGE_DAYS = 30

/** The inclusive day range a report covers, defaults applied; undefined when it starts after it ends. */
export const reportRange = (
  start: string | undefined,
  end: string | undefined,
  now: Date
): { readonly from: string; readonly to: string } | undefined => {
  const to = end ?? dayOf(now)
  const from = start ?? addDays(to, -(DEFAULT_RANGE_DAYS - 1))
  return from > to ? undefined : { from, to }
}
