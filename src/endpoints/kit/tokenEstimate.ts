/**
 * Token counts with the o200k tokenizer (gpt-tokenizer) rather than characters / 4: the input and
 * output of a stream cut short before its usage came, and `count_tokens` on an OpenAI group. The
 * tokenizer is loaded on first use (about 0.25 s, once).
 *
 * The text comes from clients, so counting is bounded (docs/performance.md has the figures):
 * - it runs in slices of SLICE_CHARS characters and yields to the event loop between them
 *   (Effect.yieldNow goes through setImmediate), so no count holds the loop for long, whatever its
 *   size or content (text the tokenizer finds hard costs up to about 100 times ordinary text);
 * - at most COUNTS_AT_ONCE counts of the process run at once, the others wait their turn (first
 *   come, first served): counts that yield together resume in the same turn of the loop, so
 *   without this bound the loop would be held for one slice per count under way, however many;
 * - past EXACT_CHARS characters over all the texts of one count, the rest is counted at the rate
 *   of what came before, so the CPU one count takes is bounded too.
 * Slices and the cut-off are in characters, never in time: the same texts always count the same.
 */
import { Effect, Semaphore } from "effect"

/** Characters counted exactly per count, over all its texts; past them, the rate so far. */
export const EXACT_CHARS = 512 * 1024

/** Characters counted between two yields to the event loop. */
export const SLICE_CHARS = 4 * 1024

/** Counts running at once in the process; the loop is held for at most this many slices at a time. */
const COUNTS_AT_ONCE = 2

const running = Semaphore.makeUnsafe(COUNTS_AT_ONCE)

/**
 * Text is counted a window at a time, cut before a space where there is one: byte-pair encoding
 * a long "word" (a run without spaces: a hostile one, or text in a script without spaces) costs
 * more per character the longer it is. Cutting before a space keeps the count of ordinary text exact.
 */
const WINDOW_CHARS = 512

/**
 * The tokenizer caches the encoding of each word it had to merge, 100,000 of them by default:
 * with windows of distinct hostile "words" that is about 350 MB held for good. This many keep the
 * words of ordinary text and bound what hostile text can hold to a few tens of MB.
 */
const MERGE_CACHE_ENTRIES = 10_000

type Counter = (text: string) => number

let counter: Promise<Counter> | undefined
const loadCounter = (): Promise<Counter> =>
  (counter ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => {
    m.setMergeCacheSize(MERGE_CACHE_ENTRIES)
    return (text: string) => m.countTokens(text)
  }))

/** Where the window from `at` ends: WINDOW_CHARS on, or before the last space within them. */
const windowEnd = (text: string, at: number): number => {
  const end = Math.min(text.length, at + WINDOW_CHARS)
  if (end === text.length) return end
  // A bounded look back (lastIndexOf would scan a text without spaces back to its start).
  for (let i = end; i > at; i--) if (text.charCodeAt(i) === 32) return i
  return end
}

/** A count under way: the next window's place, and what was counted exactly so far. */
interface Tally {
  readonly texts: ReadonlyArray<string>
  text: number
  at: number
  chars: number
  tokens: number
}

/** Counts up to SLICE_CHARS more characters; true once the exact part is done. */
const countSlice = (count: Counter, tally: Tally): boolean => {
  let slice = 0
  while (tally.chars < EXACT_CHARS && tally.text < tally.texts.length) {
    if (slice >= SLICE_CHARS) return false
    const text = tally.texts[tally.text]!
    if (tally.at >= text.length) {
      tally.text++
      tally.at = 0
      continue
    }
    const end = windowEnd(text, tally.at)
    tally.tokens += count(text.slice(tally.at, end))
    tally.chars += end - tally.at
    slice += end - tally.at
    tally.at = end
  }
  return true
}

const charsOf = (texts: ReadonlyArray<string>): number => texts.reduce((sum, t) => sum + t.length, 0)

/** The exact tokens, and the characters past the exact part at their rate. */
const totalOf = (tally: Tally): number => {
  const chars = charsOf(tally.texts)
  return chars <= tally.chars ? tally.tokens : Math.ceil((tally.tokens * chars) / tally.chars)
}

/** The tokens of `texts`, summed; falls back to characters / 4 if the tokenizer cannot load. */
export const countTokens = Effect.fnUntraced(
  function*(texts: ReadonlyArray<string>) {
    const count = yield* Effect.promise(loadCounter)
    const tally: Tally = { texts, text: 0, at: 0, chars: 0, tokens: 0 }
    while (!countSlice(count, tally)) yield* Effect.yieldNow
    return totalOf(tally)
  },
  (counted, texts) => Effect.catchDefect(counted, () => Effect.succeed(Math.ceil(charsOf(texts) / 4))),
  Semaphore.withPermits(running, 1)
)
