/**
 * The one place that picks implementations: which layer serves each service, for `npm start`
 * (`productionServices`) and for embedding and tests (`servicesLayer`, `gatewayLayer`). Every
 * service has a default; pass your own layer for any of them (README "Composing your own layers").
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import * as HttpEffect from "effect/http/HttpEffect"
import type * as SqlClient from "effect/sql/SqlClient"
import { Admin } from "./admin/Admin.js"
import { LiveStore } from "./admin/LiveStore.js"
import { AppConfig, Settings } from "./config/AppConfig.js"
import { AccessLog } from "./observability/accessLog.js"
import { type GatewayAppOptions, GatewayHttpApp } from "./server/app.js"
import { GatewayServer, type ListenOptions } from "./server/GatewayServer.js"
import type { KeyRepo } from "./services/keyRepo/KeyRepo.js"
import * as KeyRepoMemory from "./services/keyRepo/memory.js"
import type { Lifecycle } from "./services/lifecycle/Lifecycle.js"
import * as LifecycleLive from "./services/lifecycle/live.js"
import * as SettlementJournalFile from "./services/journal/file.js"
import type { SettlementJournal } from "./services/journal/SettlementJournal.js"
import * as ModerationConfigured from "./services/moderation/configured.js"
import type { Moderation } from "./services/moderation/Moderation.js"
import * as QuotaMemory from "./services/quota/memory.js"
import type { Quota } from "./services/quota/Quota.js"
import * as RateLimitsInProcess from "./services/rateLimits/inProcess.js"
import type { RateLimits } from "./services/rateLimits/RateLimits.js"
import * as RateLimitsRedis from "./services/rateLimits/redis.js"
import * as ReadinessLive from "./services/readiness/live.js"
import type { Readiness } from "./services/readiness/Readiness.js"
import * as SchedulerInProcess from "./services/scheduler/inProcess.js"
import * as SchedulerRedis from "./services/scheduler/redis.js"
import type { Scheduler } from "./services/scheduler/Scheduler.js"
import * as UpstreamLive from "./services/upstream/live.js"
import type { Upstream } from "./services/upstream/Upstream.js"
import { describeTarget, sqlServices, targetFor } from "./store/Database.js"
import * as QuotaSqlJournaled from "./store/quotaSqlJournaled.js"
import type { Store } from "./store/Store.js"

/** Layers that may need the configuration, the settings and the shutdown signal, and nothing else. */
type ServiceLayer<S> = Layer.Layer<S, unknown, AppConfig | Settings | Lifecycle>

export interface ServiceOverrides {
  readonly keyRepo?: ServiceLayer<KeyRepo>
  readonly quota?: ServiceLayer<Quota>
  readonly scheduler?: ServiceLayer<Scheduler>
  readonly rateLimits?: ServiceLayer<RateLimits>
  readonly moderation?: ServiceLayer<Moderation>
  readonly upstream?: ServiceLayer<Upstream>
  readonly accessLog?: ServiceLayer<AccessLog>
  readonly readiness?: ServiceLayer<Readiness>
}

export type Services = KeyRepo | Quota | Scheduler | RateLimits | Moderation | Upstream | Lifecycle | AccessLog | Readiness

/**
 * The services the app runs on. Defaults: KeyRepo and Quota in memory from the config, the
 * Scheduler and the per-minute RateLimits in process, Moderation as configured (rules by default), HTTP + simulator Upstream,
 * the access log through Effect's logger.
 */
export const servicesLayer = (overrides: ServiceOverrides = {}): Layer.Layer<Services, unknown, AppConfig | Settings> =>
  Layer.mergeAll(
    overrides.keyRepo ?? KeyRepoMemory.layer,
    overrides.quota ?? QuotaMemory.layer,
    overrides.scheduler ?? SchedulerInProcess.layer,
    overrides.rateLimits ?? RateLimitsInProcess.layer,
    overrides.moderation ?? ModerationConfigured.layer,
    overrides.upstream ?? UpstreamLive.layer,
    overrides.accessLog ?? AccessLog.layerLogger,
    overrides.readiness ?? ReadinessLive.layer()
  ).pipe(Layer.provideMerge(LifecycleLive.layer))

/**
 * The gateway listening on `listen` (default: a free port on 127.0.0.1), with its services exposed
 * too (for tests and embedding). `GatewayServer` says where it listens.
 */
export const gatewayLayer = (overrides: ServiceOverrides = {}, listen: ListenOptions = { port: 0, host: "127.0.0.1" }) =>
  GatewayServer.layer(listen).pipe(Layer.provideMerge(servicesLayer(overrides)))

/**
 * The gateway in-process, with no socket: a web handler (`Request` -> `Promise<Response>`) over the
 * whole app (auth, policy, slots, streams, settlement, the access log), its services built from
 * `config` (AppConfig and Settings, and anything else the services should see, such as a
 * TestClock's Clock) and `overrides`. `dispose` releases the services (README "In-process").
 */
export const gatewayWebHandler = <ROut, E>(
  config: Layer.Layer<ROut | AppConfig | Settings, E>,
  overrides: ServiceOverrides = {},
  options: GatewayAppOptions = {}
) =>
  HttpEffect.toWebHandlerLayerWith(
    GatewayHttpApp.layer(options).pipe(Layer.provideMerge(servicesLayer(overrides)), Layer.provideMerge(config)),
    { toHandler: (context) => Effect.succeed(Context.get(context, GatewayHttpApp)) }
  )

/** REDIS_URL, when set and not blank. */
const redisUrl: Effect.Effect<Option.Option<Redacted.Redacted<string>>, Config.ConfigError> = Effect.gen(function*() {
  const url = yield* Config.option(Config.Redacted("REDIS_URL"))
  return Option.filter(url, (u) => Redacted.value(u).trim() !== "")
})

/** The Scheduler on Redis when REDIS_URL is set (instances share slots and cooldowns), else in process. */
export const schedulerFromEnv: Layer.Layer<Scheduler, unknown, AppConfig | Settings> = Layer.unwrap(
  Effect.map(redisUrl, Option.match({
    onNone: () => SchedulerInProcess.layer,
    onSome: (url) => SchedulerRedis.layer({ url })
  }))
)

/** Per-minute limits shared on Redis when REDIS_URL is set (one limit across instances), else in process. */
export const rateLimitsFromEnv: Layer.Layer<RateLimits, unknown, Settings> = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* redisUrl
    const prefix = (yield* Settings).scheduling.redisKeyPrefix
    return Option.match(url, {
      onNone: () => RateLimitsInProcess.layer,
      onSome: (url) => RateLimitsRedis.layer({ url, prefix })
    })
  })
)

/**
 * /readyz over the database (`SELECT 1` on the store's SqlClient) and, when REDIS_URL is set, Redis
 * (PING on a connection of its own); not ready while draining.
 */
export const readinessFromEnv: Layer.Layer<Readiness, unknown, SqlClient.SqlClient | Lifecycle> = Layer.unwrap(
  Effect.map(redisUrl, (url) => ReadinessLive.layerDatabase(Option.getOrUndefined(url)))
)

/** `readinessFromEnv` with the settlement journal's depth in /readyz's detail. */
export const readinessJournaledFromEnv: Layer.Layer<Readiness, unknown, SqlClient.SqlClient | Lifecycle | SettlementJournal> =
  Layer.unwrap(Effect.map(redisUrl, (url) => ReadinessLive.layerDatabaseJournaled(Option.getOrUndefined(url))))

/** Operator changes announced to every instance over Redis when REDIS_URL is set, else to this process's caches. */
export const liveStoreFromEnv: Layer.Layer<LiveStore, unknown, Store> = Layer.unwrap(
  Effect.map(redisUrl, Option.match({
    onNone: () => LiveStore.layer,
    onSome: (url) => LiveStore.layerRedis(url)
  }))
)

/**
 * What `npm start` runs on: KeyRepo and Quota on the SQL store (SQLite by default, PostgreSQL
 * when DATABASE_URL says so), the Scheduler from REDIS_URL, the access log straight to stdout
 * beside the JSON logger, and the operator's Admin service on the same Store (its changes drop
 * that Store's caches at once). Settlements the store cannot take go to the settlement journal
 * (SETTLEMENT_JOURNAL_PATH, default beside the SQLite file) and are written when it returns.
 */
export const productionServices: Layer.Layer<Services | Admin, unknown, AppConfig | Settings> = Layer.unwrap(
  Effect.gen(function*() {
    const target = yield* targetFor(yield* AppConfig)
    yield* Effect.logInfo("database").pipe(Effect.annotateLogs({ database: describeTarget(target) }))
    const sql = sqlServices(target)
    const journal = SettlementJournalFile.layerConfig(
      SettlementJournalFile.defaultPath(target._tag === "Sqlite" ? target.filename : undefined)
    )
    return Layer.merge(
      servicesLayer({
        keyRepo: sql.keyRepo,
        quota: QuotaSqlJournaled.layer().pipe(Layer.provide(sql.store), Layer.provide(journal)),
        scheduler: schedulerFromEnv.pipe(Layer.provide(sql.upstreamAccounts)),
        rateLimits: rateLimitsFromEnv,
        accessLog: AccessLog.layer,
        readiness: readinessJournaledFromEnv.pipe(Layer.provide(sql.store), Layer.provide(journal))
      }),
      adminOn(sql.store, liveStoreFromEnv)
    )
  })
)

/**
 * The Admin service (as "admin-api" in the audit trail) over a Store and its SqlClient; its
 * changes reach the caches through `live` (LiveStore.layer: this process's; liveStoreFromEnv).
 */
export const adminOn = <E, R, E2>(store: Layer.Layer<Store | SqlClient.SqlClient, E, R>, live: Layer.Layer<LiveStore, E2, Store>) =>
  Admin.layer("admin-api").pipe(Layer.provide(live), Layer.provide(store))
