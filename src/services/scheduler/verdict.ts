/**
 * What an upstream failure says about the account that answered it. Pure, so the rules are tested
 * without a store:
 * - 429: cool down until the limit lifts (rateLimitReset.ts), labelled a burst or an exhausted window;
 * - 529 (overloaded): a short, fixed cooldown; the provider is busy, not the account limited;
 * - 401 / 403 (and 402 billing): out until an operator acts; retrying the same credentials cannot help;
 * - 5xx, 408, timeouts, connect errors: counted; only repeated ones within a window cool it down, so
 *   one flaky answer does not take a healthy account out;
 * - anything else (400, 404, 413...): the request's own fault; nothing against the account.
 */
import { rateLimitResetMillis } from "./rateLimitReset.js"
import type { SchedulingSettings } from "../../config/scheduling.js"

export type CooldownReason = "rate_limit_burst" | "rate_limit_window" | "overloaded" | "server_error"
export type TakeOutReason = "auth_failed" | "billing"
export type CountedReason = "server_error" | "timeout" | "unreachable"

export type Verdict =
  | { readonly _tag: "Ignore" }
  | { readonly _tag: "CoolDown"; readonly millis: number; readonly reason: CooldownReason }
  | { readonly _tag: "TakeOut"; readonly reason: TakeOutReason }
  | { readonly _tag: "Count"; readonly reason: CountedReason }

export interface FailureFacts {
  /** The upstream's HTTP status; 0 when no answer came (transport failure). */
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** Our error code for transport failures (`upstream_first_byte_timeout`, `upstream_unreachable`...). */
  readonly code: string | undefined
}

const IGNORE: Verdict = { _tag: "Ignore" }

export const verdictFor = (facts: FailureFacts, policy: SchedulingSettings, now: number): Verdict => {
  const { status } = facts
  if (status === 429) {
    const reset = rateLimitResetMillis(facts.headers, now)
    const millis = Math.min(
      Math.max(1000, reset ?? policy.rateLimitDefaultSeconds * 1000),
      policy.rateLimitMaxSeconds * 1000
    )
    return {
      _tag: "CoolDown",
      millis,
      reason: millis <= policy.rateLimitBurstSeconds * 1000 ? "rate_limit_burst" : "rate_limit_window"
    }
  }
  if (status === 529) return { _tag: "CoolDown", millis: policy.overloadSeconds * 1000, reason: "overloaded" }
  if (status === 401 || status === 403) return { _tag: "TakeOut", reason: "auth_failed" }
  if (status === 402) return { _tag: "TakeOut", reason: "billing" }
  if (status === 0) {
    return { _tag: "Count", reason: facts.code !== undefined && facts.code.includes("timeout") ? "timeout" : "unreachable" }
  }
  if (status === 408) return { _tag: "Count", reason: "timeout" }
  if (status >= 500) return { _tag: "Count", reason: "server_error" }
  return IGNORE
}

/** The label a failover is logged and counted under (the policy lives with the Scheduler contract). */
export { failoverReason } from "./Scheduler.js"
