/**
 * Token counts for usage the upstream never reported (a stream cut short before its terminal
 * event): the request's input and the output the client saw, counted with the o200k tokenizer
 * (gpt-tokenizer) rather than characters / 4. It runs only for such streams, never for a request
 * that completed; the tokenizer is loaded on first use (about 0.25 s, once).
 */
import { Effect } from "effect"

/** Text past this many characters is counted at the rate of what came before it (a bound on the event loop's time). */
const EXACT_CHARS = 256 * 1024

/**
 * Text is counted a window at a time, cut before a space where there is one: byte-pair encoding
 * is quadratic in the length of a word, and a hostile "word" (a megabyte of one character) would
 * otherwise take minutes. Cutting before a space keeps the count of ordinary text exact.
 */
const WINDOW_CHARS = 4 * 1024

type Counter = (text: string) => number

let counter: Promise<Counter> | undefined
const loadCounter = (): Promise<Counter> =>
  (counter ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => (text: string) => m.countTokens(text)))

const countWindows = (count: Counter, text: string): number => {
  let tokens = 0
  let at = 0
  while (at < text.length) {
    let end = Math.min(text.length, at + WINDOW_CHARS)
    if (end < text.length) {
      const space = text.lastIndexOf(" ", end)
      if (space > at) end = space
    }
    tokens += count(text.slice(at, end))
    at = end
  }
  return tokens
}

const count = (count: Counter, text: string): number => {
  if (text.length <= EXACT_CHARS) return countWindows(count, text)
  const exact = countWindows(count, text.slice(0, EXACT_CHARS))
  return Math.ceil((exact * text.length) / EXACT_CHARS)
}

/** The tokens of `texts`, summed; falls back to characters / 4 if the tokenizer cannot load. */
export const countTokens = (texts: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.promise(() => loadCounter()).pipe(
    Effect.map((counter) => texts.reduce((sum, text) => sum + (text === "" ? 0 : count(counter, text)), 0)),
    Effect.catchDefect(() => Effect.succeed(Math.ceil(texts.reduce((sum, t) => sum + t.length, 0) / 4)))
  )
