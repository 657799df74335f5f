/**
 * Quota in memory, seeded from the loaded configuration: balances, key quotas, subscription
 * windows and usage live as long as the process. `layerTest` builds it from explicit data.
 */
import { Clock, Effect, Layer } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import type { GatewayData } from "../../config/resolve.js"
import type { Micros, Principal } from "../../domain/model.js"
import { charge, packagePrices } from "../../domain/pricing.js"
import { addSpend, emptySpends, noLimits, type Subscription, type SubscriptionFigures, type WindowSpends } from "../../domain/subscription.js"
import type { TokenUsage } from "../../domain/usage.js"
import { addTotals, dayOf, type UsageTotals, zeroTotals } from "../../domain/usageReport.js"
import { remaining, spendLimit } from "./eligibility.js"
import { notCharged, Quota, type QuotaShape } from "./Quota.js"

const totalsOf = (usage: TokenUsage, cost: Micros): UsageTotals => ({
  requests: 1,
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  cacheReadTokens: usage.cacheReadTokens,
  cacheCreationTokens: usage.cacheCreationTokens,
  costMicros: cost
})

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
    check: (p, model) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(
          remaining(p, {
            quotaUsedMicros: quotaUsed.get(p.key.id) ?? 0,
            balanceMicros: balances.get(p.user.name) ?? p.user.balanceMicros,
            subscription: subscriptionOf(p)
          }, now),
          (left) => spendLimit(left, (usage) => charge(model, usage, p.group.rateMultiplier, data.prices, packagePrices, data.toolPrices).cost)
        )),
    settle: (s) =>
      Effect.sync(() => {
        if (settled.has(s.requestId)) return notCharged
        settled.add(s.requestId)
        const { group, key, user } = s.principal
        const charged = charge(s.model, s.usage, group.rateMultiplier, data.prices, packagePrices, data.toolPrices)
        const cost = charged.cost
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
        return charged
      }),
    snapshot: (p, range, now) =>
      Effect.sync(() => {
        const days = rollup.get(p.key.id) ?? new Map<string, Map<string, UsageTotals>>()
        const today = [...(days.get(dayOf(now))?.values() ?? [])].reduce(addTotals, zeroTotals)
        const byModel = new Map<string, UsageTotals>()
        const byDay: Array<{ day: string; totals: UsageTotals }> = []
        for (const [day, models] of days) {
          if (day < range.from || day > range.to) continue
          for (const [model, t] of models) byModel.set(model, addTotals(byModel.get(model) ?? zeroTotals, t))
          byDay.push({ day, totals: [...models.values()].reduce(addTotals, zeroTotals) })
        }
        byDay.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))
        return {
          key: p.key,
          group: p.group,
          quotaUsedMicros: quotaUsed.get(p.key.id) ?? 0,
          balanceMicros: balances.get(p.user.name) ?? p.user.balanceMicros,
          today,
          total: lifetime.get(p.key.id) ?? zeroTotals,
          byModel: [...byModel].map(([model, totals]) => ({ model, totals })),
          byDay,
          subscription: subscriptionOf(p)
        }
      }),
    track: () => Effect.void
  }
}

/** In memory, seeded from the loaded configuration. */
export const layer = Layer.effect(Quota, Effect.map(AppConfig, (c) => makeMemory(c.data)))

/** In memory, from explicit data (tests). */
export const layerTest = (data: GatewayData) => Layer.sync(Quota, () => makeMemory(data))
