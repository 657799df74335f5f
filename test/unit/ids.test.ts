/**
 * src/domain/ids.ts: ids look like the provider's (prefix, underscore, 24 hex characters) and never
 * repeat, also across the refills of the random pool they are drawn from (341 ids per refill).
 */
import { describe, expect, it } from "@effect/vitest"
import { newId, newRequestId } from "../../src/domain/ids.js"

describe("ids", () => {
  it("have the prefix clients expect and 24 hex characters", () => {
    for (const prefix of ["resp", "msg", "fc", "rs", "call", "toolu"] as const) {
      expect(newId(prefix)).toMatch(new RegExp(`^${prefix}_[0-9a-f]{24}$`))
    }
  })

  it("never repeat over many refills of the pool", () => {
    const ids = Array.from({ length: 20_000 }, () => newId("msg"))
    expect(new Set(ids).size).toBe(ids.length)
    // Random, not a counter: the ids do not share a long common prefix.
    expect(new Set(ids.map((id) => id.slice(0, 10))).size).toBeGreaterThan(10_000)
  })

  it("request ids are UUIDs", () => {
    expect(newRequestId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
