/**
 * Requests and tokens per minute, as plain arithmetic shared by the in-process store and the Redis
 * script (which repeats it in Lua): each limit is a bucket that fills by what is charged and drains
 * continuously at `limit` per minute. A charge is admitted when it fits under the limit; the bucket
 * is then full enough to refuse exactly as long as it takes to drain. This is what OpenAI's headers
 * describe: `remaining` is the room left, `reset` the time until the bucket is empty again.
 *
 * Several limits (key, user, group; requests and tokens) are decided together: all admit or none is
 * charged, so a refusal by the group's limit does not use up the key's.
 */

export const MINUTE_MS = 60_000

export type LimitKind = "requests" | "tokens"
export type LimitScope = "key" | "user" | "group"

/** One limit that applies to a request, and what the request costs against it. */
export interface Charge {
  readonly scope: LimitScope
  /** The key's id, the user's or the group's name. */
  readonly id: string
  readonly kind: LimitKind
  /** Per minute. */
  readonly limit: number
  readonly cost: number
}

/** A bucket as stored: its level when last touched. */
export interface Bucket {
  readonly used: number
  readonly at: number
}

/** The level now, after draining since it was last touched. */
export const levelAt = (bucket: Bucket | undefined, limit: number, now: number): number =>
  bucket === undefined ? 0 : Math.max(0, bucket.used - ((now - bucket.at) * limit) / MINUTE_MS)

/** How a limit stands after an admitted request, for the `x-ratelimit-*` headers. */
export interface LimitState {
  readonly limit: number
  readonly remaining: number
  /** Until the bucket is empty again. */
  readonly resetMillis: number
}

export const stateOf = (limit: number, used: number): LimitState => ({
  limit,
  remaining: Math.max(0, Math.floor(limit - used)),
  resetMillis: Math.ceil((used * MINUTE_MS) / limit)
})

/** The buckets' levels `after` the decision: charged when admitted, as they were when refused. */
export type Decision =
  | { readonly _tag: "Admitted"; readonly after: ReadonlyArray<number> }
  | {
    readonly _tag: "Refused"
    readonly charge: Charge
    readonly retryAfterMillis: number
    readonly after: ReadonlyArray<number>
  }

/**
 * Whether every charge fits; when one does not, the refusal with the longest wait (by then, all
 * fit). `levels` are the buckets' levels before the charges. A charge bigger than its whole limit
 * can never fit: it is the refusal reported (before any wait), with a minute's wait, and the caller
 * says why.
 */
export const decide = (charges: ReadonlyArray<Charge>, levels: ReadonlyArray<number>): Decision => {
  let refused: { charge: Charge; retryAfterMillis: number } | undefined
  for (let i = 0; i < charges.length; i++) {
    const charge = charges[i]!
    const level = levels[i] ?? 0
    const over = level + charge.cost - charge.limit
    if (over <= 0) continue
    const retryAfterMillis = charge.cost > charge.limit ? MINUTE_MS : Math.ceil((over * MINUTE_MS) / charge.limit)
    // A charge that can never fit is the one to report, whatever the others' waits: the client
    // must hear that waiting cannot help.
    const never = charge.cost > charge.limit
    if (
      refused === undefined ||
      (never && refused.charge.cost <= refused.charge.limit) ||
      (never === (refused.charge.cost > refused.charge.limit) && retryAfterMillis > refused.retryAfterMillis)
    ) refused = { charge, retryAfterMillis }
  }
  if (refused !== undefined) return { _tag: "Refused", ...refused, after: levels }
  return { _tag: "Admitted", after: charges.map((c, i) => (levels[i] ?? 0) + c.cost) }
}

/**
 * Of several limits of one kind, the one to report: the least room left, and of equals the
 * longest reset.
 */
export const tightest = (states: ReadonlyArray<LimitState>): LimitState | undefined => {
  let best: LimitState | undefined
  for (const s of states) {
    if (
      best === undefined || s.remaining < best.remaining ||
      (s.remaining === best.remaining && s.resetMillis > best.resetMillis)
    ) best = s
  }
  return best
}

/**
 * A duration as OpenAI writes it in `x-ratelimit-reset-*` (Go's notation): `20ms`, `1s`, `17.5s`,
 * `6m0s`, `1h0m0s`.
 */
export const formatReset = (millis: number): string => {
  const ms = Math.max(0, Math.ceil(millis))
  if (ms === 0) return "0s"
  if (ms < 1000) return `${ms}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const seconds = (ms % 60_000) / 1000
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")}s`
  if (hours > 0) return `${hours}h${minutes}m${s}`
  if (minutes > 0) return `${minutes}m${s}`
  return s
}

/** The headers for the tightest request and token limits (none for a kind without a limit). */
export const rateLimitHeaders = (
  requests: LimitState | undefined,
  tokens: LimitState | undefined
): Record<string, string> => {
  const headers: Record<string, string> = {}
  if (requests !== undefined) {
    headers["x-ratelimit-limit-requests"] = String(requests.limit)
    headers["x-ratelimit-remaining-requests"] = String(requests.remaining)
    headers["x-ratelimit-reset-requests"] = formatReset(requests.resetMillis)
  }
  if (tokens !== undefined) {
    headers["x-ratelimit-limit-tokens"] = String(tokens.limit)
    headers["x-ratelimit-remaining-tokens"] = String(tokens.remaining)
    headers["x-ratelimit-reset-tokens"] = formatReset(tokens.resetMillis)
  }
  return headers
}
