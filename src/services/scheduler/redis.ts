/**
 * The Scheduler on Redis: shared by every gateway that uses the same Redis and key prefix. Fails to
 * build, with a message naming the address, when Redis cannot be reached.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig, Settings } from "../../config/AppConfig.js"
import type { GatewayData } from "../../config/resolve.js"
import type { StoreError } from "../../domain/errors.js"
import type { Account } from "../../domain/model.js"
import { makeScheduler } from "./core.js"
import { UpstreamAccounts } from "./UpstreamAccounts.js"
import { makeRedisStore } from "./redisStore.js"
import {
  Scheduler,
  type SchedulerOptions,
  schedulerOptions,
  type SchedulerTestOptions,
  testSchedulerOptions
} from "./Scheduler.js"

export interface RedisSchedulerOptions {
  readonly url: Redacted.Redacted<string> | string
  /** Defaults to the REDIS_KEY_PREFIX setting. */
  readonly prefix?: string
}

const redisScheduler = (
  data: GatewayData,
  options: SchedulerOptions,
  redis: RedisSchedulerOptions,
  accounts?: () => ReadonlyArray<Account>
) =>
  Effect.map(
    makeRedisStore({
      url: typeof redis.url === "string" ? redis.url : Redacted.value(redis.url),
      prefix: redis.prefix ?? options.scheduling.redisKeyPrefix,
      leaseMillis: options.scheduling.redisLeaseMillis
    }),
    (store) => makeScheduler(data, options, store, accounts)
  )

export const layer = (redis: RedisSchedulerOptions): Layer.Layer<Scheduler, StoreError, AppConfig | Settings> =>
  Layer.effect(
    Scheduler,
    Effect.gen(function*() {
      const { data } = yield* AppConfig
      const settings = yield* Settings
      const live = yield* Effect.serviceOption(UpstreamAccounts)
      return yield* redisScheduler(data, schedulerOptions(settings), redis, Option.getOrUndefined(live)?.current)
    })
  )

/** Over explicit data with test options (the shared behavioural suite runs it beside the in-process one). */
export const layerTest = (data: GatewayData, redis: RedisSchedulerOptions, options: SchedulerTestOptions = {}) =>
  Layer.effect(Scheduler, redisScheduler(data, testSchedulerOptions(options), redis))
