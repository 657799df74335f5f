/** src/domain/usageReport.ts: the per-model rows of /v1/usage are bounded (issue 16, item 9). */
import { describe, expect, it } from "vitest"
import { MODEL_STATS_LIMIT, usageReport, type UsageSnapshot, zeroTotals } from "../../src/domain/usageReport.js"
import { emptySpends } from "../../src/domain/subscription.js"
import { testPrincipal } from "../support/principal.js"

const totals = (tokens: number) => ({ ...zeroTotals, requests: 1, inputTokens: tokens, outputTokens: tokens })

/** A snapshot of a key with no spending, with the parts a test sets. */
const snapshot = (p: ReturnType<typeof testPrincipal>, parts: Partial<UsageSnapshot>): UsageSnapshot => ({
  key: p.key,
  group: p.group,
  quotaUsedMicros: 0,
  balanceMicros: 0,
  today: zeroTotals,
  total: zeroTotals,
  byModel: [],
  byDay: [],
  ...parts
})

describe("model_stats", () => {
  it("lists at most MODEL_STATS_LIMIT models, busiest first, the rest summed as 'other'", () => {
    const p = testPrincipal()
    const byModel = Array.from({ length: 3_000 }, (_, i) => ({ model: `invented-${i}`, totals: totals(i + 1) }))
    const report = usageReport(snapshot(p, { byModel }), new Date())
    const stats = report.model_stats
    expect(stats).toHaveLength(MODEL_STATS_LIMIT)
    expect(stats[0]?.model).toBe("invented-2999")
    const other = stats.at(-1)!
    expect(other.model).toBe("other")
    // Everything past the first 49 is in 'other': 3,000 - 49 requests.
    expect(other.requests).toBe(3_000 - (MODEL_STATS_LIMIT - 1))
  })
})

describe("daily_stats", () => {
  it("has the range's days with usage, oldest first, with tokens and cost", () => {
    const p = testPrincipal()
    const report = usageReport(snapshot(p, {
      byDay: [
        { day: "2026-11-02", totals: { ...totals(10), costMicros: 1_500 } },
        { day: "2026-11-05", totals: totals(3) }
      ]
    }), new Date())
    expect(report.daily_stats).toEqual([
      { date: "2026-11-02", requests: 1, input_tokens: 10, output_tokens: 10, total_tokens: 20, cost: 0.0015 },
      { date: "2026-11-05", requests: 1, input_tokens: 3, output_tokens: 3, total_tokens: 6, cost: 0 }
    ])
    expect(usageReport(snapshot(p, {}), new Date()).daily_stats).toEqual([])
  })
})

describe("a subscription's status in the report", () => {
  const p = testPrincipal({ billing: "subscription" })
  const report = (status: "active" | "expired" | "suspended", expiresAt: Date | undefined) =>
    usageReport(snapshot(p, {
      subscription: {
        subscription: { userName: "u", groupName: "g", status, startsAt: undefined, expiresAt },
        limits: { daily: 5_000_000, weekly: undefined, monthly: undefined },
        spends: emptySpends
      }
    }), new Date("2026-11-26T12:00:00Z")) as { remaining: number; subscription?: { status: string } }

  it("says what the responses path acts on, with nothing remaining when it refuses", () => {
    expect(report("active", undefined)).toMatchObject({ remaining: 5, subscription: { status: "active" } })
    // Stored as active, but past its expiry date: the responses path says subscription_expired.
    expect(report("active", new Date("2026-11-01T00:00:00Z"))).toMatchObject({ remaining: 0, subscription: { status: "expired" } })
    expect(report("suspended", undefined)).toMatchObject({ remaining: 0, subscription: { status: "suspended" } })
  })
})
