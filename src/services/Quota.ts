/**
 * Quota: may this key spend (before a request), record what it spent (after, exactly once per
 * request id), and report it (/v1/usage). The memory implementation here keeps everything in the
 * process; the SQL one keeps the same contract.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import { InsufficientQuota, PermissionDenied, type RateLimited, type StoreError } from "../domain/errors.js"
import type { Micros, Principal } from "../domain/model.js"
import { costMicros } from "../domain/pricing.js"
import type { TokenUsage } from "../domain/usage.js"
import { addTotals, dayOf, type UsageSnapshot, type UsageTotals, zeroTotals } from "../domain/usageReport.js"

export interface Settlement {
  readonly requestId: string
  readonly principal: Principal
  /** The model the client asked for: what usage is reported under. */
  readonly model: string
  readonly usage: TokenUsage
  readonly at: Date
}

export interface DayRange {
  /** Inclusive YYYY-MM-DD (UTC). */
  readonly from: string
  readonly to: string
}

export type EligibilityError = InsufficientQuota | PermissionDenied | RateLimited | StoreError

export interface QuotaShape {
  readonly check: (principal: Principal) => Effect.Effect<void, EligibilityError>
  /** Idempotent per request id: a second call with the same id changes nothing. Returns the cost charged. */
  readonly settle: (s: Settlement) => Effect.Effect<Micros, StoreError>
  readonly snapshot: (principal: Principal, range: DayRange, now: Date) => Effect.Effect<UsageSnapshot, StoreError>
}

const totalsOf = (usage: TokenUsage, cost: Micros): UsageTotals => ({
  requests: 1,
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  cacheReadTokens: usage.cacheReadTokens,
  cacheCreationTokens: usage.cacheCreationTokens,
  costMicros: cost
})

/** Eligibility rules shared by every implementation: the store only supplies the figures. */
export const eligibility = (
  principal: Principal,
  figures: { readonly quotaUsedMicros: Micros; readonly balanceMicros: Micros }
): Effect.Effect<void, InsufficientQuota | PermissionDenied> => {
  const { key, group } = principal
  if (
    key.status === "quota_exhausted" ||
    (key.quotaMicros !== undefined && key.quotaMicros > 0 && figures.quotaUsedMicros >= key.quotaMicros)
  ) {
    return Effect.fail(new InsufficientQuota({ code: "key_quota_exhausted", message: "API key quota has been used up" }))
  }
  if (group.billing === "subscription") {
    // Subscriptions are stored by the SQL Quota; the in-memory one has none to find.
    return Effect.fail(
      new PermissionDenied({ code: "subscription_required", message: "No active subscription found for this group" })
    )
  }
  if (figures.balanceMicros <= 0) {
    return Effect.fail(new InsufficientQuota({ code: "insufficient_balance", message: "Insufficient account balance" }))
  }
  return Effect.void
}

const makeMemory = (data: GatewayData): QuotaShape => {
  const balances = new Map<string, Micros>([...data.users.values()].map((u) => [u.name, u.balanceMicros]))
  const quotaUsed = new Map<string, Micros>(data.keys.map((k) => [k.id, k.quotaUsedMicros]))
  const settled = new Set<string>()
  // key id -> day -> model -> totals: the rollup /v1/usage reads; never a scan of raw events.
  const rollup = new Map<string, Map<string, Map<string, UsageTotals>>>()
  const lifetime = new Map<string, UsageTotals>()

  return {
    check: (p) =>
      Effect.suspend(() =>
        eligibility(p, {
          quotaUsedMicros: quotaUsed.get(p.key.id) ?? 0,
          balanceMicros: balances.get(p.user.name) ?? p.user.balanceMicros
        })
      ),
    settle: (s) =>
      Effect.sync(() => {
        if (settled.has(s.requestId)) return 0
        settled.add(s.requestId)
        const { key, user, group } = s.principal
        const cost = costMicros(s.model, s.usage, group.rateMultiplier)
        balances.set(user.name, (balances.get(user.name) ?? user.balanceMicros) - cost)
        quotaUsed.set(key.id, (quotaUsed.get(key.id) ?? 0) + cost)
        const t = totalsOf(s.usage, cost)
        lifetime.set(key.id, addTotals(lifetime.get(key.id) ?? zeroTotals, t))
        let days = rollup.get(key.id)
        if (!days) rollup.set(key.id, days = new Map())
        const day = dayOf(s.at)
        let models = days.get(day)
        if (!models) days.set(day, models = new Map())
        models.set(s.model, addTotals(models.get(s.model) ?? zeroTotals, t))
        return cost
      }),
    snapshot: (p, range, now) =>
      Effect.sync(() => {
        const days = rollup.get(p.key.id) ?? new Map<string, Map<string, UsageTotals>>()
        const today = [...(days.get(dayOf(now))?.values() ?? [])].reduce(addTotals, zeroTotals)
        const byModel = new Map<string, UsageTotals>()
        for (const [day, models] of days) {
          if (day < range.from || day > range.to) continue
          for (const [model, t] of models) byModel.set(model, addTotals(byModel.get(model) ?? zeroTotals, t))
        }
        return {
          key: p.key,
          group: p.group,
          quotaUsedMicros: quotaUsed.get(p.key.id) ?? 0,
          balanceMicros: balances.get(p.user.name) ?? p.user.balanceMicros,
          today,
          total: lifetime.get(p.key.id) ?? zeroTotals,
          byModel: [...byModel].map(([model, totals]) => ({ model, totals }))
        }
      })
  }
}

export class Quota extends Context.Tag("modelgate/Quota")<Quota, QuotaShape>() {
  /** In-memory, seeded from the loaded configuration; figures live as long as the process. */
  static readonly layer = Layer.effect(Quota, Effect.map(AppConfig, (c) => makeMemory(c.data)))
  static readonly layerTest = (data: GatewayData) => Layer.sync(Quota, () => makeMemory(data))
}
