/** src/domain/usage.ts: a Responses `usage` object read through its Schema. */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { fromResponsesUsage } from "../../src/domain/upstreamJson.js"
import { emptyUsage, toResponsesUsage } from "../../src/domain/usage.js"

/** The reading as it was written by hand before the Schema: the reference for every value. */
const reference = (u: unknown) => {
  const int = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0)
  if (typeof u !== "object" || u === null) return emptyUsage
  const r = u as Record<string, unknown>
  const inDetails = (typeof r["input_tokens_details"] === "object" && r["input_tokens_details"]) as Record<string, unknown> | false | null
  const outDetails = (typeof r["output_tokens_details"] === "object" && r["output_tokens_details"]) as Record<string, unknown> | false | null
  return {
    inputTokens: int(r["input_tokens"]),
    outputTokens: int(r["output_tokens"]),
    cacheReadTokens: inDetails ? int(inDetails["cached_tokens"]) : 0,
    cacheCreationTokens: inDetails ? int(inDetails["cache_write_tokens"]) : 0,
    reasoningTokens: outDetails ? int(outDetails["reasoning_tokens"]) : 0
  }
}

describe("fromResponsesUsage", () => {
  it("reads the five counts", () => {
    expect(fromResponsesUsage({
      input_tokens: 1200,
      input_tokens_details: { cached_tokens: 1000, cache_write_tokens: 50 },
      output_tokens: 300,
      output_tokens_details: { reasoning_tokens: 128 },
      total_tokens: 1500
    })).toEqual({ inputTokens: 1200, outputTokens: 300, cacheReadTokens: 1000, cacheCreationTokens: 50, reasoningTokens: 128 })
  })

  it("floors fractions; negative, non-finite and non-number counts are 0; missing ones are 0", () => {
    expect(fromResponsesUsage({ input_tokens: 10.9, output_tokens: 0.5 })).toEqual({ ...emptyUsage, inputTokens: 10 })
    expect(fromResponsesUsage({
      input_tokens: -5,
      output_tokens: "300",
      input_tokens_details: { cached_tokens: Number.POSITIVE_INFINITY, cache_write_tokens: Number.NaN },
      output_tokens_details: { reasoning_tokens: null }
    })).toEqual(emptyUsage)
    expect(fromResponsesUsage({ output_tokens: 7 })).toEqual({ ...emptyUsage, outputTokens: 7 })
    expect(fromResponsesUsage({ input_tokens: 1e15 }).inputTokens).toBe(1e15)
  })

  it("details that are not objects count as zeros, the other counts stay", () => {
    for (const details of [null, "x", 5, [], [1000], true]) {
      expect(fromResponsesUsage({ input_tokens: 3, input_tokens_details: details, output_tokens_details: details }))
        .toEqual({ ...emptyUsage, inputTokens: 3 })
    }
  })

  it("a value that is not an object is emptyUsage itself", () => {
    for (const u of [undefined, null, 0, 12, "usage", true]) expect(fromResponsesUsage(u)).toBe(emptyUsage)
    expect(fromResponsesUsage([])).toEqual(emptyUsage)
  })

  it("round-trips through the wire form", () => {
    const usage = { inputTokens: 9, outputTokens: 8, cacheReadTokens: 7, cacheCreationTokens: 6, reasoningTokens: 5 }
    expect(fromResponsesUsage(toResponsesUsage(usage))).toEqual(usage)
  })

  it("agrees with the hand-written reading on any value", () => {
    const count = fc.oneof(fc.integer({ min: -10, max: 1e9 }), fc.double(), fc.constantFrom(null, "5", true, [], {}))
    const details = fc.oneof(
      fc.record({ cached_tokens: count, cache_write_tokens: count, reasoning_tokens: count }, { requiredKeys: [] }),
      fc.anything()
    )
    const usage = fc.oneof(
      fc.record({ input_tokens: count, output_tokens: count, input_tokens_details: details, output_tokens_details: details }, { requiredKeys: [] }),
      fc.anything()
    )
    fc.assert(
      fc.property(usage, (u) => {
        expect(fromResponsesUsage(u)).toEqual(reference(u))
      }),
      { numRuns: 3000 }
    )
  })
})
