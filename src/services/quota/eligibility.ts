/**
 * Whether a key may spend now: the rules every Quota implementation applies (the implementation
 * only supplies the figures). Key quota first, then the group's billing: a balance above zero, or
 * an active subscription with room in its daily, weekly and monthly windows.
 */
import { Effect } from "effect"
import { InsufficientQuota, PermissionDenied, RateLimited } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"
import { hasLimit, type SubscriptionFigures, usedIn, windowEnd, windows } from "../../domain/subscription.js"
import type { EligibilityFigures } from "./Quota.js"

const noSubscription = () =>
  new PermissionDenied({ code: "subscription_required", message: "No active subscription found for this group" })

const subscriptionEligibility = (
  sub: SubscriptionFigures | undefined,
  now: number
): Effect.Effect<void, PermissionDenied | RateLimited> => {
  if (sub === undefined) return Effect.fail(noSubscription())
  const { expiresAt, startsAt, status } = sub.subscription
  if (status === "expired" || (expiresAt !== undefined && expiresAt.getTime() <= now)) {
    return Effect.fail(new PermissionDenied({ code: "subscription_expired", message: "Your subscription has expired" }))
  }
  if (status !== "active" || (startsAt !== undefined && startsAt.getTime() > now)) {
    return Effect.fail(noSubscription())
  }
  for (const w of windows) {
    const limit = sub.limits[w]
    if (hasLimit(limit) && usedIn(w, sub.spends, now) >= limit) {
      return Effect.fail(
        new RateLimited({
          code: `${w}_limit_exceeded`,
          message: `The subscription's ${w} usage limit has been reached`,
          retryAfterSeconds: Math.max(1, Math.ceil((windowEnd(w, now) - now) / 1000))
        })
      )
    }
  }
  return Effect.void
}

/**
 * Eligibility rules shared by every implementation: the store only supplies the figures. `now`
 * (epoch milliseconds) is the caller's Clock time, so subscription windows and expiry follow
 * TestClock in tests.
 */
export const eligibility = (
  principal: Principal,
  figures: EligibilityFigures,
  now: number
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
