/**
 * modelgate's public API: each service's contract (tag, shape, test layer) to implement your own,
 * the implementations as modules of layers, the gateway app and router to mount in your own
 * platform app, and the functions that build a server from layers.
 */
export {
  AccountKeySettings,
  accountKeySettingsLayer,
  accountKeySettingsLayerConfig,
  AppConfig,
  defaultSettings,
  Settings
} from "./config/AppConfig.js"
export type { AccountKeySettingsShape, AppConfigShape, SettingsShape } from "./config/AppConfig.js"
export { DEMO_KEY, demoConfig } from "./config/demo.js"
export { ConfigError, decodeConfig, loadConfigFile, parseConfigText } from "./config/load.js"
export { sha256Hex } from "./config/resolve.js"
export type { GatewayData } from "./config/resolve.js"
export type { GatewayConfig } from "./domain/config.js"
export * from "./domain/errors.js"
export type { Account, ApiKey, Group, Principal, User } from "./domain/model.js"
export type { TokenUsage } from "./domain/usage.js"
export type { UsageSnapshot, UsageTotals } from "./domain/usageReport.js"
export { currentRequestId, requestId } from "./endpoints/kit/request.js"
export { gatewayLayer, gatewayWebHandler, productionServices, readinessFromEnv, schedulerFromEnv, servicesLayer } from "./layers.js"
export type { ServiceOverrides, Services } from "./layers.js"
export { type AccessEntry, AccessLog, type AccessLogShape } from "./observability/accessLog.js"
export type { RequestFacts } from "./observability/requestFacts.js"
export { GatewayHttpApp, makeGatewayApp, makeGatewayAppWith } from "./server/app.js"
export type { GatewayAppOptions } from "./server/app.js"
export { GatewayServer } from "./server/GatewayServer.js"
export type { GatewayServerShape, ListenOptions } from "./server/GatewayServer.js"
export { makeRouter, RESPONSES_PATHS } from "./server/router.js"
export type { GatewayRoutes } from "./server/router.js"
export { KeyRepo } from "./services/keyRepo/KeyRepo.js"
export type { KeyRepoShape } from "./services/keyRepo/KeyRepo.js"
export * as KeyRepoMemory from "./services/keyRepo/memory.js"
export { Lifecycle } from "./services/lifecycle/Lifecycle.js"
export type { LifecycleShape } from "./services/lifecycle/Lifecycle.js"
export * as LifecycleLive from "./services/lifecycle/live.js"
export * as ModerationConfigured from "./services/moderation/configured.js"
export { Moderation } from "./services/moderation/Moderation.js"
export type { ModerationDecision, ModerationShape } from "./services/moderation/Moderation.js"
export { makeRules } from "./services/moderation/rules.js"
export * as QuotaMemory from "./services/quota/memory.js"
export * as RateLimitsInProcess from "./services/rateLimits/inProcess.js"
export * as RateLimitsRedis from "./services/rateLimits/redis.js"
export { RateLimits, unlimited } from "./services/rateLimits/RateLimits.js"
export type { Admission, RateLimitsShape } from "./services/rateLimits/RateLimits.js"
export * as ReadinessLive from "./services/readiness/live.js"
export { Readiness } from "./services/readiness/Readiness.js"
export type { CheckStatus, Probe, ReadinessReport, ReadinessShape } from "./services/readiness/Readiness.js"
export { Quota } from "./services/quota/Quota.js"
export type { Charged, DayRange, EligibilityError, EligibilityFigures, QuotaShape } from "./services/quota/Quota.js"
export type { Settlement } from "./domain/settlement.js"
export type { SpendLimit } from "./domain/spend.js"
export * as SchedulerInProcess from "./services/scheduler/inProcess.js"
export * as SchedulerRedis from "./services/scheduler/redis.js"
export { defaultFailover, failoverReason, Scheduler } from "./services/scheduler/Scheduler.js"
export type {
  AccountHealth,
  AccountTicket,
  AttemptFailure,
  FailoverDecision,
  PickRequest,
  PoolStats,
  SchedulerShape,
  SlotTicket,
  UpstreamOutcome
} from "./services/scheduler/Scheduler.js"
export * as UpstreamLive from "./services/upstream/live.js"
export { readText, Upstream, wholeBody } from "./services/upstream/Upstream.js"
export type { UpstreamRequest, UpstreamResponse, UpstreamShape } from "./services/upstream/Upstream.js"
export { databaseLayer, sqlServices, storeLayer, targetFor } from "./store/Database.js"
export * as KeyRepoSql from "./store/keyRepoSql.js"
export * as QuotaSql from "./store/quotaSql.js"
export { Store } from "./store/Store.js"
export type { StoreOptions, StoreShape } from "./store/Store.js"
export { parseDatabaseUrl } from "./store/target.js"
export type { DatabaseTarget } from "./store/target.js"
