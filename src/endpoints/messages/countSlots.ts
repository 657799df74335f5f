/**
 * How many local token counts (`count_tokens` on an OpenAI group) one key may have under way at once
 * on this gateway (COUNT_TOKENS_CONCURRENCY_PER_KEY). A count holds its body (up to MAX_BODY_BYTES)
 * and takes the event loop's time slice by slice; without a bound one key could start any number.
 * A place is taken before the body is read and given back when its Scope closes, however the
 * request ends (answered, refused, or its client gone). One more is refused at once, never queued.
 * Counted in process: each gateway holds its own counts.
 */
import { Effect, type Scope } from "effect"
import { RateLimited } from "../../domain/errors.js"

const tooMany = (limit: number): RateLimited =>
  new RateLimited({
    code: "too_many_concurrent_counts",
    message: `This API key already has ${limit} token count${limit === 1 ? "" : "s"} under way, ` +
      `the most it may have at once; retry once one has been answered`,
    retryAfterSeconds: 1
  })

/**
 * The places of one gateway: `hold(keyId)` takes one for the key until the Scope closes, or
 * refuses with 429 `too_many_concurrent_counts` when the key has none left. `perKey` 0: no bound.
 */
export const makeCountSlots = (perKey: number) => {
  const held = new Map<string, number>()
  return (keyId: string): Effect.Effect<void, RateLimited, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        const now = held.get(keyId) ?? 0
        if (perKey > 0 && now >= perKey) return Effect.fail(tooMany(perKey))
        held.set(keyId, now + 1)
        return Effect.void
      }),
      () =>
        Effect.sync(() => {
          const left = (held.get(keyId) ?? 1) - 1
          if (left <= 0) held.delete(keyId)
          else held.set(keyId, left)
        })
    )
}
