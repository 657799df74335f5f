/**
 * src/store/inFlight.ts: costs accepted and not yet committed count in the eligibility figures of
 * the key, the balance-billed user and the subscription they belong to, and stop counting once
 * their batch is done, whatever the order.
 */
import { describe, expect, it } from "@effect/vitest"
import { emptySpends, noLimits, windowStart } from "../../src/domain/subscription.js"
import { InFlight } from "../../src/store/inFlight.js"
import type { EligibilityFigures } from "../../src/services/quota/Quota.js"
import { testPrincipal } from "../support/principal.js"

const committed: EligibilityFigures = { quotaUsedMicros: 1_000, balanceMicros: 50_000 }

describe("InFlight", () => {
  const alice = testPrincipal({ key: "k-alice", user: "alice", group: "paid" })
  const alice2 = testPrincipal({ key: "k-alice-2", user: "alice", group: "paid" })
  const bob = testPrincipal({ key: "k-bob", user: "bob", group: "paid" })

  it("adds a pending cost to its key's quota use and takes it off its user's balance", () => {
    const flight = new InFlight<object>()
    flight.add({}, alice, 300, Date.now())
    flight.add({}, alice2, 200, Date.now())
    expect(flight.apply(alice, committed)).toEqual({ quotaUsedMicros: 1_300, balanceMicros: 49_500 })
    expect(flight.apply(alice2, committed)).toEqual({ quotaUsedMicros: 1_200, balanceMicros: 49_500 })
    expect(flight.apply(bob, committed)).toEqual(committed)
  })

  it("stops counting an item once removed, and a second removal changes nothing", () => {
    const flight = new InFlight<object>()
    const first = {}
    const second = {}
    flight.add(first, alice, 300, Date.now())
    flight.add(second, alice, 200, Date.now())
    flight.remove(first)
    flight.remove(first)
    expect(flight.apply(alice, committed)).toEqual({ quotaUsedMicros: 1_200, balanceMicros: 49_800 })
    expect(flight.size).toBe(1)
    flight.remove(second)
    expect(flight.size).toBe(0)
    expect(flight.apply(alice, committed)).toEqual(committed)
  })

  it("charges a subscription's windows, not the balance, for a subscription group", () => {
    const subscribed = testPrincipal({ key: "k-sub", user: "carol", group: "monthly-plan", billing: "subscription" })
    const now = Date.now()
    const figures: EligibilityFigures = {
      quotaUsedMicros: 0,
      balanceMicros: 0,
      subscription: {
        subscription: { userName: "carol", groupName: "monthly-plan", status: "active", startsAt: undefined, expiresAt: undefined },
        limits: noLimits,
        spends: {
          daily: { start: windowStart("daily", now), usedMicros: 100 },
          weekly: { start: windowStart("weekly", now), usedMicros: 100 },
          monthly: emptySpends.monthly // an old window: the pending cost starts the current one
        }
      }
    }
    const flight = new InFlight<object>()
    flight.add({}, subscribed, 400, now)
    const applied = flight.apply(subscribed, figures)
    expect(applied.balanceMicros).toBe(0)
    expect(applied.quotaUsedMicros).toBe(400)
    expect(applied.subscription?.spends).toEqual({
      daily: { start: windowStart("daily", now), usedMicros: 500 },
      weekly: { start: windowStart("weekly", now), usedMicros: 500 },
      monthly: { start: windowStart("monthly", now), usedMicros: 400 }
    })
  })
})
