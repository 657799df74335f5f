/**
 * Quota: may this key spend (before a request), record what it spent (after, exactly once per
 * request id), and report it (/v1/usage): the contract. Implementations: memory.ts (in the
 * process), store/quotaSql.ts (durable, SQL); both apply the rules in eligibility.ts.
 */
import { Context, type Effect, type Scope } from "effect"
import type { InsufficientQuota, PermissionDenied, RateLimited, StoreError } from "../../domain/errors.js"
import type { KeyStatus, Micros, Principal } from "../../domain/model.js"
import type { SubscriptionFigures } from "../../domain/subscription.js"
import type { TokenUsage } from "../../domain/usage.js"
import type { UsageSnapshot } from "../../domain/usageReport.js"

export interface Settlement {
  readonly requestId: string
  readonly principal: Principal
  /** The model the client asked for: what usage is reported under. */
  readonly model: string
  readonly usage: TokenUsage
  /**
   * The usage was counted by the gateway (a stream cut before its upstream reported usage), not
   * reported by the upstream. Stored with the usage event; absent means reported.
   */
  readonly estimated?: boolean
  readonly at: Date
}

/** What a settlement charged. A repeat (the request id was settled before) charges nothing: `notCharged`. */
export interface Charged {
  readonly cost: Micros
  /**
   * The model had no price (no override, not in the price package): it was charged the fallback
   * price. Stored with the usage event (`price_fallback`) and counted in `modelgate_unpriced_requests_total`.
   */
  readonly priceFallback: boolean
}

export const notCharged: Charged = { cost: 0, priceFallback: false }

export interface DayRange {
  /** Inclusive YYYY-MM-DD (UTC). */
  readonly from: string
  readonly to: string
}

export type EligibilityError = InsufficientQuota | PermissionDenied | RateLimited | StoreError

export interface QuotaShape {
  readonly check: (principal: Principal) => Effect.Effect<void, EligibilityError>
  /** Idempotent per request id: a second call with the same id changes nothing (and returns `notCharged`). */
  readonly settle: (s: Settlement) => Effect.Effect<Charged, StoreError>
  readonly snapshot: (principal: Principal, range: DayRange, now: Date) => Effect.Effect<UsageSnapshot, StoreError>
  /**
   * Notes, for the current (request) scope, that this request may owe a settlement, so that a crash
   * before `settle` leaves a record naming the request for reconciliation. Call it after `check`.
   * An implementation with nothing to lose in a crash (memory) does nothing.
   */
  readonly track: (requestId: string, principal: Principal, model: string) => Effect.Effect<void, never, Scope.Scope>
}

/** The figures the eligibility rules read; each store supplies them its own way. */
export interface EligibilityFigures {
  /** The key's status as the store knows it now (a settlement may have exhausted it since lookup). */
  readonly keyStatus?: KeyStatus | undefined
  readonly quotaUsedMicros: Micros
  readonly balanceMicros: Micros
  /** Subscription groups: the caller's subscription to the group, undefined when there is none. */
  readonly subscription?: SubscriptionFigures | undefined
}

export class Quota extends Context.Service<Quota, QuotaShape>()("modelgate/Quota") {}
