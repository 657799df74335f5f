/**
 * Quota: may this key spend (before a request), record what it spent (after, exactly once per
 * request id), and report it (/v1/usage). The memory implementation here keeps everything in the
 * process; the SQL one (`layerSql`, over `src/store`) keeps the same contract durably.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import { InsufficientQuota, PermissionDenied, RateLimited, type StoreError } from "../domain/errors.js"
import type { KeyStatus, Micros, Principal } from "../domain/model.js"
import { costMicros } from "../domain/pricing.js"
import {
  addSpend,
  emptySpends,
  hasLimit,
  noLimits,
  type Subscription,
  type SubscriptionFigures,
  usedIn,
  windowEnd,
  windows,
  type WindowSpends
} from "../domain/subscription.js"
import type { TokenUsage } from "../domain/usage.js"
import { addTotals, dayOf, type UsageSnapshot, type UsageTotals, zeroTotals } from "../domain/usageReport.js"
import { Store } from "../store/Store.js"

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
  /**
   * Notes, for the current (request) scope, that this request may owe a settlement, so that a crash
   * before `settle` leaves a record naming the request for reconciliation. Call it after `check`.
   * An implementation with nothing to lose in a crash (memory) does nothing.
   */
  readonly track: (requestId: string, principal: Principal, model: string) => Effect.Effect<void, never, Scope.Scope>
}

/** The figures the eligibility rules read; each store supplies them its own way. */
export interface EligibilityFigures {
  /** The key's status as the store knows it now (a settlement may have exhausted it since lookup). */
  readonly keyStatus?: KeyStatus | undefined
  readonly quotaUsedMicros: Micros
  readonly balanceMicros: Micros
  /** Subscription groups: the caller's subscription to the group, undefined when there is none. */
  readonly subscription?: SubscriptionFigures | undefined
}

const totalsOf = (usage: TokenUsage, cost: Micros): UsageTotals => ({
  requests: 1,
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  cacheReadTokens: usage.cacheReadTokens,
  cacheCreationTokens: usage.cacheCreationTokens,
  costMicros: cost
})

const noSubscription = () =>
  new PermissionDenied({ code: "subscription_required", message: "No active subscription found for this group" })

const subscriptionEligibility = (
  sub: SubscriptionFigures | undefined,
  now: Date
): Effect.Effect<void, PermissionDenied | RateLimited> => {
  if (sub === undefined) return Effect.fail(noSubscription())
  const { expiresAt, startsAt, status } = sub.subscription
  if (status === "expired" || (expiresAt !== undefined && expiresAt.getTime() <= now.getTime())) {
    return Effect.fail(new PermissionDenied({ code: "subscription_expired", message: "Your subscription has expired" }))
  }
  if (status !== "active" || (startsAt !== undefined && startsAt.getTime() > now.getTime())) {
    return Effect.fail(noSubscription())
  }
  for (const w of windows) {
    const limit = sub.limits[w]
    if (hasLimit(limit) && usedIn(w, sub.spends, now.getTime()) >= limit) {
      return Effect.fail(
        new RateLimited({
          code: `${w}_limit_exceeded`,
          message: `The subscription's ${w} usage limit has been reached`,
          retryAfterSeconds: Math.max(1, Math.ceil((windowEnd(w, now.getTime()) - now.getTime()) / 1000))
        })
      )
    }
  }
  return Effect.void
}

/** Eligibility rules shared by every implementation: the store only supplies the figures. */
export const eligibility = (
  principal: Principal,
  figures: EligibilityFigures,
  now: Date = new Date()
): Effect.Effect<void, InsufficientQuota | PermissionDenied | RateLimited> => {
  const { key, group } = principal
  const status = figures.keyStatus ?? key.status
  if (
    status === "quota_exhausted" ||
    (key.quotaMicros !== undefined && key.quotaMicros > 0 && figures.quotaUsedMicros >= key.quotaMicros)
  ) {
    return Effect.fail(new InsufficientQuota({ code: "key_quota_exhausted", message: "API key quota has been used up" }))
  }
  if (group.billing === "subscription") return subscriptionEligibility(figures.subscription, now)
  if (figures.balanceMicros <= 0) {
    return Effect.fail(new InsufficientQuota({ code: "insufficient_balance", message: "Insufficient account balance" }))
  }
  return Effect.void
}

const subId = (user: string, group: string) => `${user}\u0000${group}`

const makeMemory = (data: GatewayData): QuotaShape => {
  const balances = new Map<string, Micros>([...data.users.values()].map((u) => [u.name, u.balanceMicros]))
  const quotaUsed = new Map<string, Micros>(data.keys.map((k) => [k.id, k.quotaUsedMicros]))
  const subscriptions = new Map<string, { readonly subscription: Subscription; spends: WindowSpends }>(
    data.subscriptions.map((s) => [subId(s.userName, s.groupName), { subscription: s, spends: emptySpends }])
  )
  const settled = new Set<string>()
  // key id -> day -> model -> totals: the rollup /v1/usage reads; never a scan of raw events.
  const rollup = new Map<string, Map<string, Map<string, UsageTotals>>>()
  const lifetime = new Map<string, UsageTotals>()

  const subscriptionOf = (p: Principal): SubscriptionFigures | undefined => {
    const entry = subscriptions.get(subId(p.user.name, p.group.name))
    return entry === undefined
      ? undefined
      : { subscription: entry.subscription, limits: data.windowLimits.get(p.group.name) ?? noLimits, spends: entry.spends }
  }

  return {
    check: (p) =>
      Effect.suspend(() =>
        eligibility(p, {
          quotaUsedMicros: quotaUsed.get(p.key.id) ?? 0,
          balanceMicros: balances.get(p.user.name) ?? p.user.balanceMicros,
          subscription: subscriptionOf(p)
        })
      ),
    settle: (s) =>
      Effect.sync(() => {
        if (settled.has(s.requestId)) return 0
        settled.add(s.requestId)
        const { group, key, user } = s.principal
        const cost = costMicros(s.model, s.usage, group.rateMultiplier, data.prices)
        if (group.billing === "subscription") {
          const entry = subscriptions.get(subId(user.name, group.name))
          if (entry !== undefined) entry.spends = addSpend(entry.spends, cost, s.at.getTime())
        } else {
          balances.set(user.name, (balances.get(user.name) ?? user.balanceMicros) - cost)
        }
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
          byModel: [...byModel].map(([model, totals]) => ({ model, totals })),
          subscription: subscriptionOf(p)
        }
      }),
    track: () => Effect.void
  }
}

export class Quota extends Context.Tag("modelgate/Quota")<Quota, QuotaShape>() {
  /** In-memory, seeded from the loaded configuration; figures live as long as the process. */
  static readonly layer = Layer.effect(Quota, Effect.map(AppConfig, (c) => makeMemory(c.data)))
  static readonly layerTest = (data: GatewayData) => Layer.sync(Quota, () => makeMemory(data))
  /** Durable, over the SQL store (SQLite or PostgreSQL); the same rules through `eligibility`. */
  static readonly layerSql = Layer.effect(
    Quota,
    Effect.map(Store, (store): QuotaShape => ({
      check: (p) => Effect.flatMap(store.figures(p), (figures) => eligibility(p, figures)),
      settle: store.settle,
      snapshot: store.snapshot,
      track: store.track
    }))
  )
}
