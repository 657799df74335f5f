/** src/endpoints/kit/tokenEstimate.ts: o200k token counts, bounded for text from clients. */
import { Effect } from "effect"
import { countTokens as exactCount } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "vitest"
import { countTokens, EXACT_CHARS, SLICE_CHARS } from "../../src/endpoints/kit/tokenEstimate.js"

/** Lowercase letters in a fixed pseudo-random order, no spaces: text the tokenizer finds hard. */
const hardText = (chars: number): string => {
  let s = 42
  const out = new Array<string>(chars)
  for (let i = 0; i < chars; i++) {
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = String.fromCharCode(97 + (s % 26))
  }
  return out.join("")
}

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

  it("yields to the event loop between slices: other callbacks run while a long text is counted", async () => {
    const text = "Ordinary prose, counted a slice at a time. ".repeat(6_000)
    let turns = 0
    let counting = true
    const turn = () => {
      if (!counting) return
      turns++
      setImmediate(turn)
    }
    setImmediate(turn)
    await Effect.runPromise(countTokens([text]))
    counting = false
    // A slice ends at the first window past SLICE_CHARS: at least half as many turns as that would make.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / SLICE_CHARS / 2))
  })

  it("counts the first EXACT_CHARS characters over all texts exactly, the rest at their rate", async () => {
    const first = "Some ordinary words, counted one by one. ".repeat(EXACT_CHARS / 16).slice(0, EXACT_CHARS)
    const firstTokens = await Effect.runPromise(countTokens([first]))
    expect(firstTokens).toBe(exactCount(first))
    // What comes after is not tokenized (these would count very differently): it counts at the first text's rate.
    const rest = [hardText(100_000), "x".repeat(300_000)]
    const total = first.length + rest[0]!.length + rest[1]!.length
    expect(await Effect.runPromise(countTokens([first, ...rest]))).toBe(Math.ceil((firstTokens * total) / first.length))
  })

  it("is deterministic: the same texts count the same", async () => {
    const texts = [hardText(20_000), "'s".repeat(50_000), "words and more words ".repeat(2_000)]
    const first = await Effect.runPromise(countTokens(texts))
    expect(await Effect.runPromise(countTokens(texts))).toBe(first)
  })
})
