/** src/domain/usageReport.ts: the per-model rows of /v1/usage are bounded (issue 16, item 9). */
import { describe, expect, it } from "vitest"
import { MODEL_STATS_LIMIT, usageReport, zeroTotals } from "../../src/domain/usageReport.js"
import { testPrincipal } from "../support/principal.js"

const totals = (tokens: number) => ({ ...zeroTotals, requests: 1, inputTokens: tokens, outputTokens: tokens })

describe("model_stats", () => {
  it("lists at most MODEL_STATS_LIMIT models, busiest first, the rest summed as 'other'", () => {
    const p = testPrincipal()
    const byModel = Array.from({ length: 3_000 }, (_, i) => ({ model: `invented-${i}`, totals: totals(i + 1) }))
    const report = usageReport({
      key: p.key,
      group: p.group,
      quotaUsedMicros: 0,
      balanceMicros: 0,
      today: zeroTotals,
      total: zeroTotals,
      byModel
    }, new Date())
    const stats = report.model_stats
    expect(stats).toHaveLength(MODEL_STATS_LIMIT)
    expect(stats[0]?.model).toBe("invented-2999")
    const other = stats.at(-1)!
    expect(other.model).toBe("other")
    // Everything past the first 49 is in 'other': 3,000 - 49 requests.
    expect(other.requests).toBe(3_000 - (MODEL_STATS_LIMIT - 1))
  })
})
