/**
 * Gateways for the scheduling tests: like test/support/gateway.ts, plus a log capture (failover
 * lines must carry the request id and reason), a Redis scheduler option, and helpers to read the
 * scheduler's slot figures and watch how many upstream requests run at once.
 */
import { Effect, Layer, Logger, ManagedRuntime, References } from "effect"
import { AppConfig, defaultSettings, Settings, type SettingsShape } from "../../src/config/AppConfig.js"
import type { GatewayData } from "../../src/config/resolve.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { gatewayLayer, type ServiceOverrides } from "../../src/layers.js"
import { type PoolStats, Scheduler } from "../../src/services/scheduler/Scheduler.js"
import type { SchedulingSettings } from "../../src/config/scheduling.js"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { testData } from "../support/gateway.js"
import { REDIS_URL } from "./redisHarness.js"
import * as SchedulerRedis from "../../src/services/scheduler/redis.js"

export interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

export interface SchedulingGateway {
  readonly url: string
  readonly data: GatewayData
  readonly logs: Array<LogLine>
  readonly run: <A, E>(effect: Effect.Effect<A, E, Scheduler>) => Promise<A>
  readonly stats: () => Promise<ReadonlyArray<PoolStats>>
  readonly close: () => Promise<void>
}

export interface GatewayOptions {
  readonly config: unknown
  readonly env?: Record<string, string>
  readonly settings?: Partial<Omit<SettingsShape, "scheduling">>
  readonly scheduling?: Partial<SchedulingSettings>
  /** A Redis key prefix: the gateway schedules on Redis (gateways with one prefix share it). */
  readonly redisPrefix?: string
  readonly services?: ServiceOverrides
}

export const startSchedulingGateway = async (options: GatewayOptions): Promise<SchedulingGateway> => {
  const data = testData(options.config, options.env)
  const logs: Array<LogLine> = []
  const capture = Logger.make(({ fiber, logLevel, message }) => {
    logs.push({
      level: logLevel.toUpperCase(),
      message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
      annotations: { ...fiber.getRef(References.CurrentLogAnnotations) }
    })
  })
  const settings = Settings.layer({
    ...options.settings,
    scheduling: { ...defaultSettings.scheduling, ...options.scheduling }
  })
  const scheduler = options.redisPrefix === undefined
    ? undefined
    : SchedulerRedis.layer({ url: REDIS_URL, prefix: options.redisPrefix })
  const layer = gatewayLayer({ ...options.services, ...(scheduler === undefined ? {} : { scheduler }) }).pipe(
    Layer.provide(AppConfig.layer(data, "test")),
    Layer.provide(settings),
    Layer.provide(Logger.layer([capture]))
  )
  const runtime = ManagedRuntime.make(layer)
  const server = await runtime.runPromise(GatewayServer)
  return {
    url: server.url,
    data,
    logs,
    run: (effect) => runtime.runPromise(effect),
    stats: () => runtime.runPromise(Effect.flatMap(Scheduler, (s) => s.stats)),
    close: () => runtime.dispose()
  }
}

/** True when no pool has a slot in use or a request waiting. */
export const allFree = (stats: ReadonlyArray<PoolStats>) => stats.every((p) => p.inUse === 0 && p.waiting === 0)

/** Samples how many requests the fake upstream is serving at once, until stopped. */
export const watchInFlight = (upstreams: ReadonlyArray<FakeUpstream>) => {
  let max = 0
  const timer = setInterval(() => {
    const now = upstreams.reduce((n, u) => n + u.inFlight(), 0)
    if (now > max) max = now
  }, 2)
  return {
    stop: () => {
      clearInterval(timer)
      return max
    }
  }
}

export const streamRequest = (base: string, key: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${base}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
    ...(signal === undefined ? {} : { signal })
  })
