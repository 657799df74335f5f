/**
 * Whether a key may spend now, and how much: the rules every Quota implementation applies (the
 * implementation only supplies the figures and the prices). Key quota first, then the group's billing: a balance above zero, or
 * an active subscription with room in its daily, weekly and monthly windows.
 */
import { Effect } from "effect"
import { InsufficientQuota, PermissionDenied, RateLimited } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"
import { hasLimit, type SubscriptionFigures, usedIn, windowEnd, windows } from "../../domain/subscription.js"
import type { Micros } from "../../domain/model.js"
import type { TokenUsage } from "../../domain/usage.js"
import type { EligibilityFigures, SpendLimit } from "./Quota.js"

const noSubscription = () =>
  new PermissionDenied({ code: "subscription_required", message: "No active subscription found for this group" })

const subscriptionEligibility = (
  sub: SubscriptionFigures | undefined,
  now: number
): Effect.Effect<Micros | undefined, PermissionDenied | RateLimited> => {
  if (sub === undefined) return Effect.fail(noSubscription())
  const { expiresAt, startsAt, status } = sub.subscription
  if (status === "expired" || (expiresAt !== undefined && expiresAt.getTime() <= now)) {
    return Effect.fail(new PermissionDenied({ code: "subscription_expired", message: "Your subscription has expired" }))
  }
  if (status !== "active" || (startsAt !== undefined && startsAt.getTime() > now)) {
    return Effect.fail(noSubscription())
  }
  let left: Micros | undefined
  for (const w of windows) {
    const limit = sub.limits[w]
    if (!hasLimit(limit)) continue
    const used = usedIn(w, sub.spends, now)
    if (used >= limit) {
      return Effect.fail(
        new RateLimited({
          code: `${w}_limit_exceeded`,
          message: `The subscription's ${w} usage limit has been reached`,
          retryAfterSeconds: Math.max(1, Math.ceil((windowEnd(w, now) - now) / 1000))
        })
      )
    }
    left = Math.min(left ?? Infinity, limit - used)
  }
  return Effect.succeed(left)
}

const least = (a: Micros | undefined, b: Micros | undefined): Micros | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/**
 * Eligibility rules shared by every implementation: the store only supplies the figures. `now`
 * (epoch milliseconds) is the caller's Clock time, so subscription windows and expiry follow
 * TestClock in tests.
 */
export const eligibility = (
  principal: Principal,
  figures: EligibilityFigures,
  now: number
): Effect.Effect<Micros | undefined, InsufficientQuota | PermissionDenied | RateLimited> => {
  const { key, group } = principal
  const status = figures.keyStatus ?? key.status
  if (
    status === "quota_exhausted" ||
    (key.quotaMicros !== undefined && key.quotaMicros > 0 && figures.quotaUsedMicros >= key.quotaMicros)
  ) {
    return Effect.fail(new InsufficientQuota({ code: "key_quota_exhausted", message: "API key quota has been used up" }))
  }
  const keyLeft = key.quotaMicros !== undefined && key.quotaMicros > 0 ? key.quotaMicros - figures.quotaUsedMicros : undefined
  if (group.billing === "subscription") {
    return Effect.map(subscriptionEligibility(figures.subscription, now), (left) => least(left, keyLeft))
  }
  if (figures.balanceMicros <= 0) {
    return Effect.fail(new InsufficientQuota({ code: "insufficient_balance", message: "Insufficient account balance" }))
  }
  return Effect.succeed(least(figures.balanceMicros, keyLeft))
}

/** The spend limit of an eligible request, priced by `costOf`. */
export const spendLimit = (remainingMicros: Micros | undefined, costOf: (usage: TokenUsage) => Micros): SpendLimit | undefined =>
  remainingMicros === undefined ? undefined : { remainingMicros, costOf }
