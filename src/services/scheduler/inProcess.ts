/** The Scheduler in process: slots, queues, sticky sessions and cooldowns for one gateway instance. */
import { Effect, Layer, Option } from "effect"
import { AppConfig, Settings } from "../../config/AppConfig.js"
import type { GatewayData } from "../../config/resolve.js"
import { makeScheduler } from "./core.js"
import { UpstreamAccounts } from "./UpstreamAccounts.js"
import { makeMemoryStore } from "./memoryStore.js"
import { Scheduler, type SchedulerTestOptions, schedulerOptions, testSchedulerOptions } from "./Scheduler.js"

export const layer = Layer.effect(
  Scheduler,
  Effect.gen(function*() {
    const { data } = yield* AppConfig
    const settings = yield* Settings
    // The accounts can change while running when an UpstreamAccounts is provided (the SQL store's).
    const live = yield* Effect.serviceOption(UpstreamAccounts)
    return makeScheduler(data, schedulerOptions(settings), makeMemoryStore(), Option.getOrUndefined(live)?.current)
  })
)

/** Over explicit data with test options (short waits by default). */
export const layerTest = (data: GatewayData, options: SchedulerTestOptions = {}) =>
  Layer.sync(Scheduler, () => makeScheduler(data, testSchedulerOptions(options), makeMemoryStore()))
