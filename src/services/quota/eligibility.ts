/**
 * Whether a key may spend now, and how much: the rules every Quota implementation applies (the
 * implementation only supplies the figures and the prices). Key quota first, then the group's billing: a balance above zero, or
 * an active subscription with room in its daily, weekly and monthly windows.
 */
import { Effect } from "effect"
import { InsufficientQuota, PermissionDenied, RateLimited } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"
import { formatUsd } from "../../domain/money.js"
import { hasLimit, type SubscriptionFigures, usedIn, type Window, windowEnd, windows } from "../../domain/subscription.js"
import type { Micros } from "../../domain/model.js"
import type { SpendLimit } from "../../domain/spend.js"
import type { TokenUsage } from "../../domain/usage.js"
import type { EligibilityFigures } from "./Quota.js"

const noSubscription = () =>
  new PermissionDenied({ code: "subscription_required", message: "No active subscription found for this group" })

/**
 * What a key may still spend, and the refusal of a request that costs more than that: the bound
 * that is least (the key's quota, the balance, a subscription window) says which.
 */
export interface Remaining {
  readonly micros: Micros
  readonly shortOf: (estimatedMicros: Micros) => InsufficientQuota | RateLimited
}

const windowExceeded = (w: Window, now: number, message: string) =>
  new RateLimited({
    code: `${w}_limit_exceeded`,
    message,
    retryAfterSeconds: Math.max(1, Math.ceil((windowEnd(w, now) - now) / 1000))
  })

const costs = (estimatedMicros: Micros) => `The request's estimated cost (about ${formatUsd(estimatedMicros)} USD)`

const subscriptionEligibility = (
  sub: SubscriptionFigures | undefined,
  now: number
): Effect.Effect<Remaining | undefined, PermissionDenied | RateLimited> => {
  if (sub === undefined) return Effect.fail(noSubscription())
  const { expiresAt, startsAt, status } = sub.subscription
  if (status === "expired" || (expiresAt !== undefined && expiresAt.getTime() <= now)) {
    return Effect.fail(new PermissionDenied({ code: "subscription_expired", message: "Your subscription has expired" }))
  }
  if (status !== "active" || (startsAt !== undefined && startsAt.getTime() > now)) {
    return Effect.fail(noSubscription())
  }
  let least: Remaining | undefined
  for (const w of windows) {
    const limit = sub.limits[w]
    if (!hasLimit(limit)) continue
    const used = usedIn(w, sub.spends, now)
    if (used >= limit) return Effect.fail(windowExceeded(w, now, `The subscription's ${w} usage limit has been reached`))
    const left = limit - used
    if (least === undefined || left < least.micros) {
      least = {
        micros: left,
        shortOf: (estimated) =>
          windowExceeded(w, now, `${costs(estimated)} exceeds what is left of the subscription's ${w} usage limit (${formatUsd(left)} USD)`)
      }
    }
  }
  return Effect.succeed(least)
}

const lesser = (a: Remaining | undefined, b: Remaining | undefined): Remaining | undefined =>
  a === undefined ? b : b === undefined ? a : b.micros < a.micros ? b : a

/**
 * Eligibility rules shared by every implementation: the store only supplies the figures. `now`
 * (epoch milliseconds) is the caller's Clock time, so subscription windows and expiry follow
 * TestClock in tests. What the key may still spend: undefined when nothing bounds it.
 */
export const remaining = (
  principal: Principal,
  figures: EligibilityFigures,
  now: number
): Effect.Effect<Remaining | undefined, InsufficientQuota | PermissionDenied | RateLimited> => {
  const { key, group } = principal
  const status = figures.keyStatus ?? key.status
  if (
    status === "quota_exhausted" ||
    (key.quotaMicros !== undefined && key.quotaMicros > 0 && figures.quotaUsedMicros >= key.quotaMicros)
  ) {
    return Effect.fail(new InsufficientQuota({ code: "key_quota_exhausted", message: "API key quota has been used up" }))
  }
  const quotaLeft = key.quotaMicros !== undefined && key.quotaMicros > 0 ? key.quotaMicros - figures.quotaUsedMicros : undefined
  const keyLeft: Remaining | undefined = quotaLeft === undefined ? undefined : {
    micros: quotaLeft,
    shortOf: (estimated) =>
      new InsufficientQuota({
        code: "key_quota_exhausted",
        message: `${costs(estimated)} exceeds what is left of the API key's quota (${formatUsd(quotaLeft)} USD)`
      })
  }
  if (group.billing === "subscription") {
    return Effect.map(subscriptionEligibility(figures.subscription, now), (left) => lesser(left, keyLeft))
  }
  if (figures.balanceMicros <= 0) {
    return Effect.fail(new InsufficientQuota({ code: "insufficient_balance", message: "Insufficient account balance" }))
  }
  const balance = figures.balanceMicros
  return Effect.succeed(lesser({
    micros: balance,
    shortOf: (estimated) =>
      new InsufficientQuota({
        code: "insufficient_balance",
        message: `${costs(estimated)} exceeds the account balance (${formatUsd(balance)} USD)`
      })
  }, keyLeft))
}

/** `remaining` as micro-dollars: what the key may still spend (undefined: nothing bounds it). */
export const eligibility = (
  principal: Principal,
  figures: EligibilityFigures,
  now: number
): Effect.Effect<Micros | undefined, InsufficientQuota | PermissionDenied | RateLimited> =>
  Effect.map(remaining(principal, figures, now), (left) => left?.micros)

/** The spend limit of an eligible request, priced by `costOf`. */
export const spendLimit = (left: Remaining | undefined, costOf: (usage: TokenUsage) => Micros): SpendLimit | undefined =>
  left === undefined ? undefined : { remainingMicros: left.micros, costOf, shortOf: left.shortOf }
