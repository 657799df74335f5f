/** src/endpoints/responses/tokenEstimate.ts: token counts for usage an upstream never reported. */
import { Effect } from "effect"
import { countTokens as exactCount } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "vitest"
import { countTokens } from "../../src/endpoints/responses/tokenEstimate.js"

describe("countTokens", () => {
  it("counts ordinary text exactly, window by window", async () => {
    const text = "The quick brown fox jumps over the lazy dog; Ünïcödé, numbers 12345 and code `x = y + 1`. ".repeat(700)
    expect(text.length).toBeGreaterThan(8 * 4096)
    expect(await Effect.runPromise(countTokens([text, "and one more"]))).toBe(exactCount(text) + exactCount("and one more"))
  })

  it("counts a hostile megabyte-long word in bounded time (window by window), not forever", async () => {
    const tokens = await Effect.runPromise(countTokens(["x".repeat(2 * 1024 * 1024)]))
    expect(tokens).toBeGreaterThan(0)
  }, 10_000)
})
