/**
 * The per-minute limits' arithmetic (src/services/rateLimits/window.ts), pure: buckets that drain
 * continuously, all-or-none decisions across several limits, the refusal a client is told to wait
 * for, the tightest limit reported, and the `x-ratelimit-*` headers in OpenAI's duration notation.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  type Charge,
  decide,
  formatReset,
  levelAt,
  MINUTE_MS,
  rateLimitHeaders,
  stateOf,
  tightest
} from "../../src/services/rateLimits/window.js"

const requests = (limit: number, scope: Charge["scope"] = "key", id = "k"): Charge => ({
  scope,
  id,
  kind: "requests",
  limit,
  cost: 1
})
const tokens = (limit: number, cost: number, scope: Charge["scope"] = "key", id = "k"): Charge => ({
  scope,
  id,
  kind: "tokens",
  limit,
  cost
})

describe("levelAt: a bucket drains at its limit per minute", () => {
  it("an unknown bucket is empty", () => {
    expect(levelAt(undefined, 60, 1_000)).toBe(0)
  })

  it("drains linearly: 60 per minute is 1 per second", () => {
    const bucket = { used: 10, at: 1_000 }
    expect(levelAt(bucket, 60, 1_000)).toBe(10)
    expect(levelAt(bucket, 60, 2_000)).toBeCloseTo(9, 10)
    expect(levelAt(bucket, 60, 6_000)).toBeCloseTo(5, 10)
    expect(levelAt(bucket, 60, 10_500)).toBeCloseTo(0.5, 10)
  })

  it("never goes below empty, however long ago it was touched", () => {
    expect(levelAt({ used: 10, at: 0 }, 60, 11_000)).toBe(0)
    expect(levelAt({ used: 3, at: 0 }, 3, 10 * MINUTE_MS)).toBe(0)
  })

  it("a full bucket is empty again a minute later, whatever its limit", () => {
    expect(levelAt({ used: 1_000, at: 0 }, 1_000, MINUTE_MS)).toBe(0)
    expect(levelAt({ used: 2, at: 0 }, 2, MINUTE_MS - 1)).toBeGreaterThan(0)
  })
})

describe("decide", () => {
  it("admits what fits and reports every bucket charged", () => {
    const decision = decide([requests(3), tokens(100, 40)], [1, 50])
    expect(decision).toEqual({ _tag: "Admitted", after: [2, 90] })
  })

  it("admits a charge that fills a bucket exactly to its limit, refuses the next", () => {
    expect(decide([requests(2)], [1])).toEqual({ _tag: "Admitted", after: [2] })
    const refused = decide([requests(2)], [2])
    expect(refused._tag).toBe("Refused")
  })

  it("all or none: a refusal by one limit charges none of the others (levels stay as they were)", () => {
    const charges = [requests(10, "key"), requests(5, "user", "u"), tokens(1_000, 100, "group", "g")]
    const levels = [3, 5, 200]
    const decision = decide(charges, levels)
    expect(decision).toMatchObject({ _tag: "Refused", charge: { scope: "user", kind: "requests" } })
    // The key's and the group's buckets are not charged: `after` is what they were.
    expect(decision.after).toEqual(levels)
  })

  it("the wait is exactly how long the bucket takes to drain enough for the charge", () => {
    // Limit 2 per minute, full: one request's room drains in 30 s.
    expect(decide([requests(2)], [2])).toMatchObject({ _tag: "Refused", retryAfterMillis: 30_000 })
    // 1000 tokens per minute, 950 used, 100 asked: 50 over, 3 s to drain.
    expect(decide([tokens(1_000, 100)], [950])).toMatchObject({ _tag: "Refused", retryAfterMillis: 3_000 })
    // Fractions round up to the next millisecond: never told to come back too early.
    const d = decide([requests(7)], [7])
    expect(d).toMatchObject({ _tag: "Refused", retryAfterMillis: Math.ceil(MINUTE_MS / 7) })
  })

  it("of several refusals, the one with the longest wait is reported (by then all fit)", () => {
    const key = requests(60, "key") // full: 1 s to room for one more
    const group = tokens(600, 300, "group", "g") // 300 over at 10 per second: 30 s
    const user = requests(2, "user", "u") // full: 30 s too (a tie: the first found stays)
    const decision = decide([key, group, user], [60, 600, 2])
    expect(decision._tag).toBe("Refused")
    if (decision._tag !== "Refused") return
    expect(decision.charge).toBe(group)
    expect(decision.retryAfterMillis).toBe(30_000)
    // The same limits in another order: the same verdict.
    const again = decide([user, group, key], [2, 600, 60])
    expect(again).toMatchObject({ _tag: "Refused", retryAfterMillis: 30_000 })
    // And with the group's wait longer than the user's, the group's is reported whatever the order.
    const longer = decide([user, tokens(600, 400, "group", "g")], [2, 600])
    expect(longer).toMatchObject({ _tag: "Refused", charge: { scope: "group" }, retryAfterMillis: 40_000 })
  })

  it("a charge bigger than its whole limit is refused even on an empty bucket, with a minute's wait", () => {
    const big = tokens(100, 101)
    const decision = decide([requests(10), big], [0, 0])
    expect(decision).toEqual({ _tag: "Refused", charge: big, retryAfterMillis: MINUTE_MS, after: [0, 0] })
  })

  it("a charge that can never fit is the refusal reported, even when another limit's wait is as long or longer", () => {
    const never = tokens(50, 100, "group", "g")
    // The key's tokens are full to the brim: 100 more is a minute's wait too (a tie).
    const tie = decide([tokens(100, 100, "key"), never], [100, 0])
    expect(tie).toMatchObject({ _tag: "Refused", charge: never, retryAfterMillis: MINUTE_MS })
    // A settlement above the estimate left the key's bucket well over its limit: 80 s to drain,
    // but waiting cannot help the group's limit, so that is what the client must hear.
    const longer = decide([tokens(300, 100, "key"), never], [580, 0])
    expect(longer).toMatchObject({ _tag: "Refused", charge: never, retryAfterMillis: MINUTE_MS })
    expect(decide([never, tokens(300, 100, "key")], [0, 580])).toMatchObject({ charge: never })
    // Without one that can never fit, the longest wait (here over a minute) is reported.
    expect(decide([tokens(300, 100, "key")], [580])).toMatchObject({ retryAfterMillis: 76_000 })
  })

  it("a charge exactly the size of its limit fits an empty bucket", () => {
    expect(decide([tokens(100, 100)], [0])).toEqual({ _tag: "Admitted", after: [100] })
  })

  it("a level that has drained partly leaves room for a request again", () => {
    // Limit 2: full at t=0; after 30 s, one request's worth has drained.
    const bucket = { used: 2, at: 0 }
    expect(decide([requests(2)], [levelAt(bucket, 2, 29_999)])._tag).toBe("Refused")
    expect(decide([requests(2)], [levelAt(bucket, 2, 30_000)])._tag).toBe("Admitted")
  })
})

describe("stateOf and tightest", () => {
  it("remaining is the whole room left, reset the time to drain completely", () => {
    expect(stateOf(3, 1)).toEqual({ limit: 3, remaining: 2, resetMillis: 20_000 })
    expect(stateOf(3, 2.5)).toEqual({ limit: 3, remaining: 0, resetMillis: 50_000 })
    expect(stateOf(1_000, 0)).toEqual({ limit: 1_000, remaining: 1_000, resetMillis: 0 })
    // Over the limit (a settlement above the estimate): no negative room.
    expect(stateOf(100, 250)).toMatchObject({ remaining: 0, resetMillis: 150_000 })
  })

  it("reports the limit with the least room left; of equals, the longest reset", () => {
    const roomy = { limit: 100, remaining: 90, resetMillis: 6_000 }
    const tight = { limit: 5, remaining: 1, resetMillis: 48_000 }
    const tightLonger = { limit: 3, remaining: 1, resetMillis: 60_000 }
    expect(tightest([])).toBeUndefined()
    expect(tightest([roomy])).toBe(roomy)
    expect(tightest([roomy, tight])).toBe(tight)
    expect(tightest([tight, roomy])).toBe(tight)
    expect(tightest([tight, tightLonger, roomy])).toBe(tightLonger)
    expect(tightest([tightLonger, tight])).toBe(tightLonger)
  })
})

describe("formatReset: OpenAI's (Go's) duration notation", () => {
  it.each([
    [0, "0s"],
    [-5, "0s"],
    [1, "1ms"],
    [20, "20ms"],
    [999, "999ms"],
    [999.2, "1s"],
    [1_000, "1s"],
    [1_500, "1.5s"],
    [1_234, "1.234s"],
    [17_500, "17.5s"],
    [59_999, "59.999s"],
    [60_000, "1m0s"],
    [61_500, "1m1.5s"],
    [360_000, "6m0s"],
    [3_600_000, "1h0m0s"],
    [3_661_001, "1h1m1.001s"]
  ])("%d ms → %s", (millis, text) => {
    expect(formatReset(millis)).toBe(text)
  })
})

describe("rateLimitHeaders", () => {
  it("the six headers for a request limit and a token limit", () => {
    expect(rateLimitHeaders(stateOf(3, 1), stateOf(1_000, 250))).toEqual({
      "x-ratelimit-limit-requests": "3",
      "x-ratelimit-remaining-requests": "2",
      "x-ratelimit-reset-requests": "20s",
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "750",
      "x-ratelimit-reset-tokens": "15s"
    })
  })

  it("only the kind that has a limit, and nothing at all without one", () => {
    expect(Object.keys(rateLimitHeaders(stateOf(60, 1), undefined)).sort()).toEqual([
      "x-ratelimit-limit-requests",
      "x-ratelimit-remaining-requests",
      "x-ratelimit-reset-requests"
    ])
    expect(rateLimitHeaders(undefined, stateOf(60, 1))).toEqual({
      "x-ratelimit-limit-tokens": "60",
      "x-ratelimit-remaining-tokens": "59",
      "x-ratelimit-reset-tokens": "1s"
    })
    expect(rateLimitHeaders(undefined, undefined)).toEqual({})
  })

  it("values are plain integers and Go durations a client can parse", () => {
    const headers = rateLimitHeaders(stateOf(7, 3.3), stateOf(90_000, 45_123.7))
    expect(headers["x-ratelimit-remaining-requests"]).toBe("3")
    expect(headers["x-ratelimit-remaining-tokens"]).toBe("44876")
    for (const name of ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]) {
      expect(headers[name]).toMatch(/^(\d+h)?(\d+m)?(\d+(\.\d+)?s|\d+ms)$/)
    }
  })
})
