/**
 * Scheduler: which upstream account serves a request, and the concurrency slots that guard keys and
 * accounts: the contract. One algorithm (core.ts) over two stores: inProcess.ts (one gateway, the
 * default) and redis.ts (many gateways sharing slots, queue limits, sticky sessions and cooldowns).
 * docs/scheduling.md describes the behaviour and its settings.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { SettingsShape } from "../../config/AppConfig.js"
import { defaultSchedulingSettings, type SchedulingSettings } from "../../config/scheduling.js"
import {
  NoAvailableAccount,
  type RateLimited,
  type StoreError,
  UPSTREAM_AUTH_FAILED,
  upstreamDeniedRequest,
  upstreamFailsOver
} from "../../domain/errors.js"
import { type Account, accountServes, type Group, type Principal } from "../../domain/model.js"
import type { PoolStats } from "./store.js"

export type { PoolStats } from "./store.js"

export interface SchedulerOptions {
  /** How long a request waits for a key/user or account slot before a 429. */
  readonly slotWaitMillis: number
  /** How many requests may wait for one key's (or user's) slots at once. */
  readonly slotQueueLimit: number
  readonly scheduling: SchedulingSettings
}

export interface PickRequest {
  readonly group: Group
  readonly model: string
  /** The conversation's sticky id (domain/session.ts), undefined when none is known. */
  readonly session: string | undefined
  /** Accounts already tried for this request (failover). */
  readonly exclude: ReadonlySet<string>
}

export type UpstreamOutcome =
  | { readonly _tag: "Success" }
  | {
    readonly _tag: "Failure"
    /** The upstream's HTTP status; 0 when no answer came. */
    readonly status: number
    /** The answer's headers (rate-limit resets); empty when no answer came. */
    readonly headers: Readonly<Record<string, string>>
    /**
     * Our code for the failure: a transport failure's (`upstream_first_byte_timeout`...), or the
     * one the client would hear (`upstream_auth_failed` for a refused credential); undefined when
     * the caller has none.
     */
    readonly code: string | undefined
    /** The upstream's own words (credentials redacted), kept with a take-out for the operator. */
    readonly detail?: string | undefined
    /** An earlier attempt of the same request, on another account, had its credential refused. */
    readonly credentialRefusedBefore?: boolean | undefined
  }

/** A failed upstream attempt, as the failover decision reads it. */
export interface AttemptFailure {
  /** The upstream's HTTP status; 0 when no answer came. */
  readonly status: number
  /** Our code for the failure (`upstream_first_byte_timeout`, `upstream_error`...), if any. */
  readonly code: string | undefined
  /** An earlier attempt of the same request, on another account, had its credential refused. */
  readonly credentialRefusedBefore?: boolean | undefined
}

/**
 * After a failed attempt, whether the request moves on to another account (nothing has reached the
 * client yet). `reason` labels the failover in logs and metrics; a `Stop` has one when the failure
 * was of a kind that fails over but no switch is left, none when another account would not help
 * (the request's own fault: 400, 404, 413...).
 */
export type FailoverDecision =
  | { readonly _tag: "Switch"; readonly reason: string }
  | { readonly _tag: "Stop"; readonly reason: string | undefined }

/**
 * A slot, or a place in the queue for one. Both belong to the scope they were taken in. A queued
 * ticket's `wait` ends holding the slot, or fails with 429 concurrency_limit_exceeded when the wait
 * runs out; the caller decides where to wait (a stream request waits inside its SSE response).
 */
export type SlotTicket =
  | { readonly _tag: "Granted" }
  | { readonly _tag: "Queued"; readonly wait: Effect.Effect<void, RateLimited | StoreError> }

/**
 * An account's slot, or a place in its queue, like a SlotTicket; `release` gives either back before
 * the scope ends (a failed attempt frees its account for the next request at once). Idempotent.
 */
export type AccountTicket =
  | { readonly _tag: "Granted"; readonly account: Account; readonly release: Effect.Effect<void> }
  | {
    readonly _tag: "Queued"
    readonly account: Account
    readonly wait: Effect.Effect<void, RateLimited | StoreError>
    readonly release: Effect.Effect<void>
  }

export interface SchedulerShape {
  /** The group's accounts on its platform, less those taken out until an operator acts (for /v1/models). */
  readonly accounts: (group: Group) => Effect.Effect<ReadonlyArray<Account>>
  /**
   * One of the key's concurrency slots (the user's when the key has no limit of its own) for the
   * current scope, or a place in its bounded queue; 429 too_many_pending_requests when that is full.
   */
  readonly acquireKeySlot: (principal: Principal) => Effect.Effect<SlotTicket, RateLimited | StoreError, Scope.Scope>
  /** Picks an account and holds one of its slots (or a place in its queue) for the current scope. */
  readonly acquireAccount: (
    req: PickRequest
  ) => Effect.Effect<AccountTicket, NoAvailableAccount | RateLimited | StoreError, Scope.Scope>
  /**
   * Whether to try another account after `attempts` attempts, the last of which failed so: the
   * failover policy (which failures move on, how many switches).
   */
  readonly failover: (failure: AttemptFailure, attempts: number) => Effect.Effect<FailoverDecision>
  /** What the upstream did, so a failing account cools down and its sessions move on. */
  readonly report: (account: Account, outcome: UpstreamOutcome, session?: string) => Effect.Effect<void>
  /** Brings an account back after an auth take-out or a cooldown (operator action). */
  readonly reinstate: (account: string) => Effect.Effect<void, StoreError>
  /** Takes a configured account out of rotation until reinstated (operator action); false when there is none by that name. */
  readonly takeOut: (account: string) => Effect.Effect<boolean, StoreError>
  /** Slots in use and requests waiting, per pool (for /metrics). */
  readonly stats: Effect.Effect<ReadonlyArray<PoolStats>, StoreError>
  /** Every configured account as the scheduler sees it now (for operators). */
  readonly health: Effect.Effect<ReadonlyArray<AccountHealth>, StoreError>
}

export interface AccountHealth {
  readonly account: Account
  readonly inUse: number
  readonly waiting: number
  /** Set while the account cools down after failures or a rate limit. */
  readonly coolingDownUntil: Date | undefined
  /** Taken out after its credentials were refused, until an operator reinstates it or they change. */
  readonly takenOut: boolean
  /** Why and since when it is taken out, when it is and the store knows. */
  readonly takeOut?: TakeOutRecord | undefined
  /** Why it cools down (`auth_failed`, `rate_limit_burst`...), while it does and the store knows. */
  readonly coolingDownReason?: string | undefined
}

export interface TakeOutRecord {
  /** `auth_failed`, `billing` or `operator`. */
  readonly reason: string
  readonly since: Date | undefined
  /** What the upstream said when it refused the credential (redacted), if it said anything. */
  readonly upstreamMessage: string | undefined
}

export const schedulerOptions = (settings: SettingsShape): SchedulerOptions => ({
  slotWaitMillis: settings.slotWaitMillis,
  slotQueueLimit: settings.slotQueueLimit,
  scheduling: settings.scheduling
})

export interface SchedulerTestOptions {
  readonly slotWaitMillis?: number
  readonly slotQueueLimit?: number
  readonly scheduling?: Partial<SchedulingSettings>
}

export const testSchedulerOptions = (options: SchedulerTestOptions = {}): SchedulerOptions => ({
  slotWaitMillis: options.slotWaitMillis ?? 1000,
  slotQueueLimit: options.slotQueueLimit ?? 20,
  scheduling: { ...defaultSchedulingSettings, ...options.scheduling }
})

/** The group has no accounts at all: the operator's to fix, so the client is told not to retry. */
export const noAccountsConfigured = (): NoAvailableAccount =>
  new NoAvailableAccount({
    message: "No upstream account is configured for this API key's group; the gateway's operator must add one",
    noneConfigured: true
  })

/**
 * A Scheduler for tests, deterministic and without limits: the first of `accounts` (in their order)
 * that is in the group, on its platform, serves the model and was not tried yet; every slot granted
 * at once; no cooldowns, no sticky sessions; failover as the default policy with `maxSwitches`
 * (default 2). The real in-process scheduler over explicit data is scheduler/inProcess.ts's `layerTest`.
 */
const makeTest = (accounts: ReadonlyArray<Account>, maxSwitches: number): SchedulerShape => {
  const granted: SlotTicket = { _tag: "Granted" }
  const inGroup = (group: Group) => accounts.filter((a) => a.platform === group.platform && a.groups.includes(group.name))
  return {
    accounts: (group) => Effect.succeed(inGroup(group)),
    acquireKeySlot: () => Effect.succeed(granted),
    acquireAccount: (req) => {
      const all = inGroup(req.group)
      if (all.length === 0) return Effect.fail(noAccountsConfigured())
      const account = all.find((a) => !req.exclude.has(a.name) && accountServes(a, req.model))
      return account === undefined
        ? Effect.fail(new NoAvailableAccount({ message: `No available account for model '${req.model}' in this group` }))
        : Effect.succeed({ _tag: "Granted", account, release: Effect.void })
    },
    failover: (failure, attempts) => Effect.succeed(defaultFailover(failure, attempts, maxSwitches)),
    report: () => Effect.void,
    reinstate: () => Effect.void,
    takeOut: (name) => Effect.succeed(accounts.some((a) => a.name === name)),
    stats: Effect.succeed([]),
    health: Effect.succeed(accounts.map((account) => ({ account, inUse: 0, waiting: 0, coolingDownUntil: undefined, takenOut: false })))
  }
}

/** The label a failover is logged and counted under. */
export const failoverReason = (status: number, code: string | undefined): string => {
  if (status === 0) {
    if (code === "upstream_connect_timeout") return "connect_timeout"
    if (code === "upstream_first_byte_timeout") return "first_byte_timeout"
    if (code === "upstream_idle_timeout") return "idle_timeout"
    return "connect_error"
  }
  if (status === 429) return "rate_limited"
  if (status === 529) return "overloaded"
  if (status === 401 || status === 403) return "auth_failed"
  if (status === 402) return "billing"
  if (status === 408) return "timeout"
  return "server_error"
}

/** A refusal of the account's credential: a 401, or a 403 that says so (`upstream_auth_failed`). */
export const refusedCredential = (failure: AttemptFailure): boolean =>
  failure.status === 401 || failure.code === UPSTREAM_AUTH_FAILED

/**
 * The default failover policy: 401/402/408/429/5xx, transport failures and a 403 that refused the
 * credential (`upstream_auth_failed`) move on to another account, at most `maxSwitches` times. Any
 * other 403 denied what the request asked: every account would deny it too, and each try would
 * only cost the client time. A second account refusing the same request's credential stops it
 * too: the request is then the likelier cause (something in it the upstream reads as a bad
 * credential), and one request may cool down at most one account (verdict.ts holds the second
 * refusal against nobody).
 */
export const defaultFailover = (failure: AttemptFailure, attempts: number, maxSwitches: number): FailoverDecision => {
  if (!upstreamFailsOver(failure.status)) return { _tag: "Stop", reason: undefined }
  if (upstreamDeniedRequest(failure.status, failure.code ?? "")) return { _tag: "Stop", reason: undefined }
  if (failure.credentialRefusedBefore === true && refusedCredential(failure)) return { _tag: "Stop", reason: undefined }
  const reason = failoverReason(failure.status, failure.code)
  return attempts >= 1 + Math.max(0, maxSwitches) ? { _tag: "Stop", reason } : { _tag: "Switch", reason }
}

export class Scheduler extends Context.Service<Scheduler, SchedulerShape>()("modelgate/Scheduler") {
  /** Deterministic, unlimited, over `accounts` (see makeTest above). */
  static readonly layerTest = (
    accounts: ReadonlyArray<Account>,
    options: { readonly maxSwitches?: number } = {}
  ): Layer.Layer<Scheduler> => Layer.sync(Scheduler, () => makeTest(accounts, options.maxSwitches ?? defaultSchedulingSettings.maxSwitches))
}
