/**
 * The rate-limit policy over a bucket store: which limits apply to a principal, the refusal a
 * client reads, the headers, and the settlement of the token estimate.
 */
import { Effect } from "effect"
import { RateLimited, type StoreError } from "../../domain/errors.js"
import type { MinuteLimits } from "../../domain/model.js"
import { type Admission, type RateLimitsShape, unlimited } from "./RateLimits.js"
import { type Charge, type Decision, type LimitKind, type LimitScope, rateLimitHeaders, stateOf, tightest } from "./window.js"

/** Where buckets live. `decide` charges all or nothing, atomically across the charges. */
export interface BucketStore {
  readonly decide: (charges: ReadonlyArray<Charge>) => Effect.Effect<Decision, StoreError>
  /** Adds `delta` (negative to give back) to one bucket. */
  readonly adjust: (charge: Charge, delta: number) => Effect.Effect<void, StoreError>
}

const hasLimits = (l: MinuteLimits): boolean => l.rpmLimit !== undefined || l.tpmLimit !== undefined

const scopeWords: Record<LimitScope, string> = { key: "this API key", user: "this key's user", group: "this key's group" }

const refusal = (charge: Charge, retryAfterMillis: number, headers: Record<string, string>): RateLimited => {
  const tooBig = charge.cost > charge.limit
  const unit = charge.kind === "requests" ? "requests" : "tokens"
  const message = tooBig
    ? `This request needs about ${charge.cost} tokens, more than the ${charge.limit} tokens per minute allowed for ${scopeWords[charge.scope]}`
    : `Rate limit reached for ${scopeWords[charge.scope]}: ${charge.limit} ${unit} per minute. Retry after ${Math.ceil(retryAfterMillis / 1000)}s`
  return new RateLimited({
    code: charge.kind === "requests" ? "requests_per_minute_exceeded" : "tokens_per_minute_exceeded",
    message,
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMillis / 1000)),
    // Waiting cannot help a request bigger than the whole limit: without this the openai SDK
    // honours `retry-after: 60` and retries it (twice by default), a minute apart, in vain.
    headers: tooBig ? { ...headers, "x-should-retry": "false" } : headers
  })
}

const headersOf = (charges: ReadonlyArray<Charge>, levels: ReadonlyArray<number>) => {
  const of = (kind: LimitKind) =>
    tightest(charges.flatMap((c, i) => (c.kind === kind ? [stateOf(c.limit, levels[i] ?? 0)] : [])))
  return rateLimitHeaders(of("requests"), of("tokens"))
}

export const makeRateLimits = (store: BucketStore): RateLimitsShape => ({
  admit: (principal, estimateTokens) => {
    const { key, user, group } = principal
    // The common case, no limit anywhere: no allocation, no store round trip.
    if (!hasLimits(key) && !hasLimits(user) && !hasLimits(group)) return Effect.succeed(unlimited)
    const charges: Array<Charge> = []
    let tokens: number | undefined
    const add = (scope: LimitScope, id: string, limits: MinuteLimits) => {
      if (limits.rpmLimit !== undefined) charges.push({ scope, id, kind: "requests", limit: limits.rpmLimit, cost: 1 })
      if (limits.tpmLimit !== undefined) {
        tokens ??= Math.max(0, Math.ceil(estimateTokens()))
        charges.push({ scope, id, kind: "tokens", limit: limits.tpmLimit, cost: tokens })
      }
    }
    add("key", key.id, key)
    add("user", user.name, user)
    add("group", group.name, group)
    return Effect.flatMap(store.decide(charges), (decision): Effect.Effect<Admission, RateLimited> => {
      const headers = headersOf(charges, decision.after)
      if (decision._tag === "Refused") return Effect.fail(refusal(decision.charge, decision.retryAfterMillis, headers))
      const estimate = tokens ?? 0
      const tokenCharges = charges.filter((c) => c.kind === "tokens")
      let settled = false
      return Effect.succeed({
        headers,
        settle: (used) => {
          if (settled || tokenCharges.length === 0 || used === estimate) return Effect.void
          settled = true
          return Effect.forEach(tokenCharges, (c) => store.adjust(c, used - estimate), { discard: true }).pipe(
            Effect.catch((e) =>
              Effect.logWarning("token rate limit not settled").pipe(
                Effect.annotateLogs({ key: key.id, error: e.message })
              )
            )
          )
        }
      })
    })
  }
})
