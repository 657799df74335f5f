/**
 * Scheduler: which upstream account serves a request, and the concurrency slots that guard keys and
 * accounts. One algorithm (scheduler/core.ts) over two stores: in process (one gateway, the
 * default) and Redis (many gateways sharing slots, queue limits, sticky sessions and cooldowns).
 * docs/scheduling.md describes the behaviour and its settings.
 */
import { Config, Context, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { AppConfig, Settings, type SettingsShape } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import type { NoAvailableAccount, RateLimited, StoreError } from "../domain/errors.js"
import type { Account, Group, Principal } from "../domain/model.js"
import { makeScheduler, type SchedulerOptions } from "./scheduler/core.js"
import { makeMemoryStore } from "./scheduler/memoryStore.js"
import { makeRedisStore } from "./scheduler/redisStore.js"
import { defaultSchedulingSettings, type SchedulingSettings } from "./scheduler/settings.js"
import type { PoolStats } from "./scheduler/store.js"

export type { SchedulerOptions } from "./scheduler/core.js"
export type { PoolStats } from "./scheduler/store.js"

export interface PickRequest {
  readonly group: Group
  readonly model: string
  /** The conversation's sticky id (scheduler/session.ts), undefined when none is known. */
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
    /** Our code for a transport failure (`upstream_first_byte_timeout`...), undefined otherwise. */
    readonly code: string | undefined
  }

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
  /** What the upstream did, so a failing account cools down and its sessions move on. */
  readonly report: (account: Account, outcome: UpstreamOutcome, session?: string) => Effect.Effect<void>
  /** Brings an account back after an auth take-out or a cooldown (operator action). */
  readonly reinstate: (account: string) => Effect.Effect<void, StoreError>
  /** Slots in use and requests waiting, per pool (for /metrics). */
  readonly stats: Effect.Effect<ReadonlyArray<PoolStats>, StoreError>
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

export interface RedisSchedulerOptions {
  readonly url: Redacted.Redacted<string> | string
  /** Defaults to the REDIS_KEY_PREFIX setting. */
  readonly prefix?: string
}

const redisScheduler = (data: GatewayData, options: SchedulerOptions, redis: RedisSchedulerOptions) =>
  Effect.map(
    makeRedisStore({
      url: typeof redis.url === "string" ? redis.url : Redacted.value(redis.url),
      prefix: redis.prefix ?? options.scheduling.redisKeyPrefix,
      leaseMillis: options.scheduling.redisLeaseMillis
    }),
    (store) => makeScheduler(data, options, store)
  )

export class Scheduler extends Context.Tag("modelgate/Scheduler")<Scheduler, SchedulerShape>() {
  /** In process: one gateway instance. */
  static readonly layer = Layer.effect(
    Scheduler,
    Effect.gen(function*() {
      const { data } = yield* AppConfig
      const settings = yield* Settings
      return makeScheduler(data, schedulerOptions(settings), makeMemoryStore())
    })
  )

  /**
   * On Redis, shared by every gateway that uses the same Redis and key prefix. Fails to build, with a
   * message naming the address, when Redis cannot be reached.
   */
  static readonly layerRedis = (redis: RedisSchedulerOptions): Layer.Layer<Scheduler, StoreError, AppConfig | Settings> =>
    Layer.scoped(
      Scheduler,
      Effect.gen(function*() {
        const { data } = yield* AppConfig
        const settings = yield* Settings
        return yield* redisScheduler(data, schedulerOptions(settings), redis)
      })
    )

  /** Redis when REDIS_URL is set, else in process (what `main` uses). */
  static readonly layerConfig: Layer.Layer<Scheduler, unknown, AppConfig | Settings> = Layer.unwrapEffect(
    Effect.map(
      Config.option(Config.redacted("REDIS_URL")),
      (url) =>
        Option.match(Option.filter(url, (u) => Redacted.value(u).trim() !== ""), {
          onNone: () => Scheduler.layer,
          onSome: (u) => Scheduler.layerRedis({ url: u })
        })
    )
  )

  static readonly layerTest = (data: GatewayData, options: SchedulerTestOptions = {}) =>
    Layer.sync(Scheduler, () => makeScheduler(data, testSchedulerOptions(options), makeMemoryStore()))

  /** Redis with test options (the shared behavioural suite runs it beside `layerTest`). */
  static readonly layerRedisTest = (data: GatewayData, redis: RedisSchedulerOptions, options: SchedulerTestOptions = {}) =>
    Layer.scoped(Scheduler, redisScheduler(data, testSchedulerOptions(options), redis))
}
