/**
 * What an upstream failure says about the account that answered it. Pure, so the rules are tested
 * without a store:
 * - 429: cool down until the limit lifts (domain/rateLimitReset.ts), labelled a burst or an exhausted window;
 * - 529 (overloaded): a short, fixed cooldown; the provider is busy, not the account limited;
 * - 401, or a 403 whose body says the credential is bad (domain/credential.ts `credentialRefused`): a strike, a short
 *   cooldown; a second strike on another request within the confirm window takes the account out
 *   until an operator acts, so one odd answer never takes a working account out. A refusal that
 *   follows another account's for the same request is held against nobody: one request cools down
 *   at most one account, so no request can take a group offline;
 * - any other 403: the request asked for something this credential may not use (a model, a
 *   feature); the client hears it and the account is not blamed;
 * - 402 (billing): out until an operator acts; retrying the same credentials cannot help;
 * - 5xx, 408, timeouts, connect errors: counted; only repeated ones within a window cool it down, so
 *   one flaky answer does not take a healthy account out;
 * - anything else (400, 404, 413...): the request's own fault; nothing against the account.
 */
import { rateLimitResetMillis } from "../../domain/rateLimitReset.js"
import type { SchedulingSettings } from "../../config/scheduling.js"
import { UPSTREAM_AUTH_FAILED } from "../../domain/errors.js"

export type CooldownReason = "rate_limit_burst" | "rate_limit_window" | "overloaded" | "server_error" | "auth_failed"
export type TakeOutReason = "auth_failed" | "billing"
export type CountedReason = "server_error" | "timeout" | "unreachable"

export type Verdict =
  | { readonly _tag: "Ignore" }
  | { readonly _tag: "CoolDown"; readonly millis: number; readonly reason: CooldownReason }
  /** Cool down `millis`; taken out instead when an earlier strike is at most `windowMillis` old. */
  | { readonly _tag: "Strike"; readonly millis: number; readonly windowMillis: number; readonly reason: "auth_failed" }
  | { readonly _tag: "TakeOut"; readonly reason: TakeOutReason }
  | { readonly _tag: "Count"; readonly reason: CountedReason }

export interface FailureFacts {
  /** The upstream's HTTP status; 0 when no answer came (transport failure). */
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /**
   * Our error code for the failure: `upstream_first_byte_timeout`, `upstream_unreachable`... for a
   * transport failure; `upstream_auth_failed` for an answer that refused the credential.
   */
  readonly code: string | undefined
  /** An earlier attempt of the same request, on another account, had its credential refused. */
  readonly credentialRefusedBefore?: boolean | undefined
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
  if (status === 401 || (status === 403 && facts.code === UPSTREAM_AUTH_FAILED)) {
    if (facts.credentialRefusedBefore === true) return IGNORE
    return {
      _tag: "Strike",
      millis: Math.max(0, policy.authCooldownSeconds * 1000),
      windowMillis: Math.max(0, policy.authConfirmWindowSeconds * 1000),
      reason: "auth_failed"
    }
  }
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
