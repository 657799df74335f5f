/**
 * What an eligible request may spend, and the check of its input's estimated cost against it
 * before the call. Pure: the Quota (services/quota/) supplies the figures, the admitted turn
 * (core/admittedTurn.ts) applies `affordable`.
 */
import { Effect } from "effect"
import type { InsufficientQuota, RateLimited } from "./errors.js"
import type { Micros } from "./model.js"
import { emptyUsage, type TokenUsage } from "./usage.js"

export interface SpendLimit {
  readonly remainingMicros: Micros
  /** What `usage` of the request's model costs this principal (its group's prices and multiplier). */
  readonly costOf: (usage: TokenUsage) => Micros
  /**
   * The refusal of a request whose estimated cost `remainingMicros` (with the overdraft) cannot pay,
   * from the bound that is least: the key's quota, the balance, or a subscription window.
   */
  readonly shortOf: (estimatedMicros: Micros) => InsufficientQuota | RateLimited
}

/**
 * Refuses a request whose input alone, at a rough count of its tokens, costs more than the key may
 * still spend plus the overdraft (STREAM_OVERDRAFT_USD): the balance check before the call, which
 * otherwise sees only that something is left, not what the request will take.
 */
export const affordable = (
  spend: SpendLimit,
  roughInputTokens: number,
  overdraftMicros: Micros
): Effect.Effect<void, InsufficientQuota | RateLimited> => {
  const estimated = spend.costOf({ ...emptyUsage, inputTokens: roughInputTokens })
  return estimated > spend.remainingMicros + overdraftMicros ? Effect.fail(spend.shortOf(estimated)) : Effect.void
}
