/**
 * The /v1/usage body, built from a storage-neutral snapshot. Pure: the Quota service supplies the
 * figures, this decides the shape (spec fields plus what CC Switch-style clients read).
 */
import type { ApiKey, Group, Micros } from "./model.js"
import { microsToUsd } from "./model.js"

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
    ...(s.byModel.length > 0
      ? {
        model_stats: [...s.byModel]
          .sort((a, b) =>
            (b.totals.inputTokens + b.totals.outputTokens) - (a.totals.inputTokens + a.totals.outputTokens) ||
            a.model.localeCompare(b.model)
          )
          .map(({ model, totals }) => {
            const { cache_creation_tokens: _c, cache_read_tokens: _r, ...rest } = wireTotals(totals)
            return { model, ...rest }
          })
      }
      : {})
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
  const balance = microsToUsd(s.balanceMicros)
  return {
    mode: "unrestricted" as const,
    ...common,
    planName: s.group.billing === "subscription" ? s.group.name : "Wallet balance",
    remaining: balance,
    unit: "USD",
    balance
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/

/** A YYYY-MM-DD day that exists on the calendar, else undefined. */
export const parseDay = (s: string): string | undefined => {
  if (!DATE.test(s)) return undefined
  const d = new Date(`${s}T00:00:00Z`)
  return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? undefined : s
}

export const dayOf = (d: Date): string => d.toISOString().slice(0, 10)

export const addDays = (day: string, n: number): string =>
  dayOf(new Date(new Date(`${day}T00:00:00Z`).getTime() + n * 86_400_000))
