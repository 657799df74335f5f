/**
 * Building the gateway from layers. Every service has a default; pass your own layer for any of
 * them to `servicesLayer` (see README "Composing your own layers").
 */
import { Layer } from "effect"
import type { AppConfig, Settings } from "./config/AppConfig.js"
import { GatewayServer, type ListenOptions } from "./server/GatewayServer.js"
import { AccessLog } from "./observability/accessLog.js"
import { KeyRepo } from "./services/KeyRepo.js"
import { Lifecycle } from "./services/Lifecycle.js"
import { Moderation } from "./services/Moderation.js"
import { Quota } from "./services/Quota.js"
import { Scheduler } from "./services/Scheduler.js"
import * as UpstreamLive from "./services/upstream/live.js"
import type { Upstream } from "./services/upstream/Upstream.js"

/** Layers that may need the configuration, the settings and the shutdown signal, and nothing else. */
type ServiceLayer<S> = Layer.Layer<S, unknown, AppConfig | Settings | Lifecycle>

export interface ServiceOverrides {
  readonly keyRepo?: ServiceLayer<KeyRepo>
  readonly quota?: ServiceLayer<Quota>
  readonly scheduler?: ServiceLayer<Scheduler>
  readonly moderation?: ServiceLayer<Moderation>
  readonly upstream?: ServiceLayer<Upstream>
  readonly accessLog?: ServiceLayer<AccessLog>
}

export type Services = KeyRepo | Quota | Scheduler | Moderation | Upstream | Lifecycle | AccessLog

/**
 * The services the app runs on. Defaults: in-memory KeyRepo and Quota from the config, in-process
 * Scheduler (pass `Scheduler.layerRedis(...)`, or `Scheduler.layerConfig` to follow REDIS_URL, to
 * share slots and cooldowns between instances), rules Moderation, HTTP + simulator Upstream, the
 * access log through Effect's logger (`main` writes it straight to stdout: `AccessLog.layer`).
 */
export const servicesLayer = (overrides: ServiceOverrides = {}): Layer.Layer<Services, unknown, AppConfig | Settings> =>
  Layer.mergeAll(
    overrides.keyRepo ?? KeyRepo.layer,
    overrides.quota ?? Quota.layer,
    overrides.scheduler ?? Scheduler.layer,
    overrides.moderation ?? Moderation.layer,
    overrides.upstream ?? UpstreamLive.layer,
    overrides.accessLog ?? AccessLog.layerLogger
  ).pipe(Layer.provideMerge(Lifecycle.layer))

/**
 * The gateway listening on `listen` (default: a free port on 127.0.0.1), with its services exposed
 * too (for tests and embedding). `GatewayServer` says where it listens.
 */
export const gatewayLayer = (overrides: ServiceOverrides = {}, listen: ListenOptions = { port: 0, host: "127.0.0.1" }) =>
  GatewayServer.layer(listen).pipe(Layer.provideMerge(servicesLayer(overrides)))
