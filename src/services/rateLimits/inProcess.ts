/** RateLimits in process: the buckets of one gateway instance, in a Map. */
import { Clock, Effect, Layer } from "effect"
import { type BucketStore, makeRateLimits } from "./core.js"
import { RateLimits } from "./RateLimits.js"
import { type Bucket, type Charge, decide, levelAt, MINUTE_MS } from "./window.js"

const bucketKey = (c: Charge) => `${c.scope}\u0000${c.id}\u0000${c.kind}`

/** Past this many buckets, empty ones are dropped (a bucket drains within a minute of its last use). */
const SWEEP_AT = 10_000

export const makeMemoryBuckets = (): BucketStore => {
  const buckets = new Map<string, Bucket>()
  const sweep = (now: number) => {
    if (buckets.size < SWEEP_AT) return
    for (const [k, b] of buckets) if (now - b.at > MINUTE_MS) buckets.delete(k)
  }
  return {
    decide: (charges) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const keys = charges.map(bucketKey)
        const levels = charges.map((c, i) => levelAt(buckets.get(keys[i]!), c.limit, now))
        const decision = decide(charges, levels)
        if (decision._tag === "Admitted") {
          sweep(now)
          decision.after.forEach((used, i) => buckets.set(keys[i]!, { used, at: now }))
        }
        return decision
      }),
    adjust: (charge, delta) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const key = bucketKey(charge)
        const used = Math.max(0, levelAt(buckets.get(key), charge.limit, now) + delta)
        buckets.set(key, { used, at: now })
      })
  }
}

export const layer = Layer.sync(RateLimits, () => makeRateLimits(makeMemoryBuckets()))
