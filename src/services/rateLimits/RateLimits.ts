/**
 * RateLimits: requests and tokens per minute for keys, users and groups (`rpm_limit`, `tpm_limit`),
 * the contract. One policy (core.ts) over two stores: in process (one gateway, the default) and
 * Redis (every gateway on the same Redis holds one shared limit), chosen by wiring.
 */
import { Context, Effect, Layer } from "effect"
import type { RateLimited, StoreError } from "../../domain/errors.js"
import type { Principal } from "../../domain/model.js"

/** What admission leaves the request: its headers, and the settlement of its token estimate. */
export interface Admission {
  /** `x-ratelimit-*` for the tightest applicable limits; empty when none applies. */
  readonly headers: Readonly<Record<string, string>>
  /**
   * Replaces the token estimate charged on admission with what the request really used (0 when
   * no answer came). Never fails: it runs after the answer; a store failure is logged.
   */
  readonly settle: (tokensUsed: number) => Effect.Effect<void>
}

/** Nothing limited: no headers, nothing to settle. (A value like any other: compare `headers`, not identity.) */
export const unlimited: Admission = { headers: {}, settle: () => Effect.void }

export interface RateLimitsShape {
  /**
   * Charges one request, and `estimateTokens()` tokens where a token limit applies (the function is
   * called only then), against every limit of the key, its user and its group, all or none; 429
   * `requests_per_minute_exceeded` / `tokens_per_minute_exceeded` with `retry-after` and the
   * headers when one is reached.
   */
  readonly admit: (
    principal: Principal,
    estimateTokens: () => number
  ) => Effect.Effect<Admission, RateLimited | StoreError>
}

export class RateLimits extends Context.Service<RateLimits, RateLimitsShape>()("modelgate/RateLimits") {
  /**
   * Deterministic: `admit` decides (default: nothing limited, no headers). The in-process limits
   * with real buckets are rateLimits/inProcess.ts's `layer`.
   */
  static readonly layerTest = (admit: RateLimitsShape["admit"] = () => Effect.succeed(unlimited)): Layer.Layer<RateLimits> =>
    Layer.succeed(RateLimits, { admit })
}
