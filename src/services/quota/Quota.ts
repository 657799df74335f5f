/**
 * Quota: may this key spend (before a request), record what it spent (after, exactly once per
 * request id), and report it (/v1/usage): the contract. Implementations: memory.ts (in the
 * process), store/quotaSql.ts (durable, SQL); both apply the rules in eligibility.ts.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { InsufficientQuota, PermissionDenied, RateLimited, StoreError } from "../../domain/errors.js"
import type { KeyStatus, Micros, Principal } from "../../domain/model.js"
import type { SubscriptionFigures } from "../../domain/subscription.js"
import type { Settlement } from "../../domain/settlement.js"
import type { SpendLimit } from "../../domain/spend.js"
import { addTotals, dayOf, type UsageSnapshot, type UsageTotals, zeroTotals } from "../../domain/usageReport.js"

/** What a settlement charged. A repeat (the request id was settled before) charges nothing: `notCharged`. */
export interface Charged {
  readonly cost: Micros
  /**
   * The model had no price (no override, not in the price package): it was charged the fallback
   * price. Stored with the usage event (`price_fallback`) and counted in `modelgate_unpriced_requests_total`.
   */
  readonly priceFallback: boolean
  /**
   * The store could not take it: the settlement is in the local journal (quota/journaled.ts) and is
   * charged when the store takes it again. `cost` is 0 here: it is not known until then.
   */
  readonly journaled?: boolean
}

export const notCharged: Charged = { cost: 0, priceFallback: false }

export interface DayRange {
  /** Inclusive YYYY-MM-DD (UTC). */
  readonly from: string
  readonly to: string
}

export type EligibilityError = InsufficientQuota | PermissionDenied | RateLimited | StoreError

/**
 * What an admitted request may still spend: the balance, the key's quota or the subscription
 * window left, whichever is least. A stream whose running cost passes it (with the configured
 * overdraft) is ended; without a limit (nothing bounds the key) there is none.
 */
export interface QuotaShape {
  /** Whether the principal may spend on `model` now, and how much (undefined: nothing bounds it). */
  readonly check: (principal: Principal, model: string) => Effect.Effect<SpendLimit | undefined, EligibilityError>
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

export interface QuotaTestOptions {
  /** Who may spend (default: everyone). */
  readonly check?: QuotaShape["check"]
}

/**
 * A Quota for tests, in memory and deterministic: every key may spend (unless `check` says
 * otherwise), nothing costs anything, and settlements are counted once per request id so that
 * the usage report shows them. (The configured in-memory Quota, with balances, key quotas and
 * prices, is quota/memory.ts's `layerTest(data)`.)
 */
const makeTest = (options: QuotaTestOptions): QuotaShape => {
  const settled = new Set<string>()
  const byKey = new Map<string, Map<string, Map<string, UsageTotals>>>()
  return {
    check: options.check ?? (() => Effect.undefined),
    settle: (s) =>
      Effect.sync(() => {
        if (settled.has(s.requestId)) return notCharged
        settled.add(s.requestId)
        let days = byKey.get(s.principal.key.id)
        if (days === undefined) byKey.set(s.principal.key.id, days = new Map())
        const day = dayOf(s.at)
        let models = days.get(day)
        if (models === undefined) days.set(day, models = new Map())
        models.set(s.model, addTotals(models.get(s.model) ?? zeroTotals, {
          requests: 1,
          inputTokens: s.usage.inputTokens,
          outputTokens: s.usage.outputTokens,
          cacheReadTokens: s.usage.cacheReadTokens,
          cacheCreationTokens: s.usage.cacheCreationTokens,
          costMicros: 0
        }))
        return notCharged
      }),
    snapshot: (p, range, now) =>
      Effect.sync((): UsageSnapshot => {
        const days = byKey.get(p.key.id) ?? new Map<string, Map<string, UsageTotals>>()
        const sum = (models: Map<string, UsageTotals> | undefined) => [...(models?.values() ?? [])].reduce(addTotals, zeroTotals)
        const byModel = new Map<string, UsageTotals>()
        const byDay: Array<{ day: string; totals: UsageTotals }> = []
        for (const day of [...days.keys()].sort()) {
          if (day < range.from || day > range.to) continue
          const models = days.get(day)!
          for (const [model, t] of models) byModel.set(model, addTotals(byModel.get(model) ?? zeroTotals, t))
          byDay.push({ day, totals: sum(models) })
        }
        return {
          key: p.key,
          group: p.group,
          quotaUsedMicros: 0,
          balanceMicros: p.user.balanceMicros,
          today: sum(days.get(dayOf(now))),
          total: [...days.values()].map(sum).reduce(addTotals, zeroTotals),
          byModel: [...byModel].map(([model, totals]) => ({ model, totals })),
          byDay
        }
      }),
    track: () => Effect.void
  }
}

export class Quota extends Context.Service<Quota, QuotaShape>()("modelgate/Quota") {
  /** In memory, deterministic: everyone eligible (unless `check` says otherwise), nothing charged. */
  static readonly layerTest = (options: QuotaTestOptions = {}): Layer.Layer<Quota> => Layer.sync(Quota, () => makeTest(options))
}
