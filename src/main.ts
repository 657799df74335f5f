/**
 * Entry point: read config and settings, build the services, serve HTTP, drain on SIGTERM.
 */
import "./v8Flags.js" // first: GC settings for the whole process
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Config, Effect, Exit, Layer, LogLevel, Option, References, Runtime } from "effect"
import { AdminServer } from "./admin/AdminServer.js"
import { adminListenFromEnv } from "./admin/listen.js"
import { AppConfig, Settings } from "./config/AppConfig.js"
import { productionServices } from "./layers.js"
import * as JsonLogger from "./observability/logger.js"
import * as Tracing from "./observability/tracing.js"
import { GatewayServer } from "./server/GatewayServer.js"
import { Lifecycle } from "./services/lifecycle/Lifecycle.js"

/** Prints how to try the demo when no config was given. */
const Banner = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const address = (yield* GatewayServer).url
    yield* Effect.logInfo("modelgate listening").pipe(
      Effect.annotateLogs({ address, config: config.source, groups: config.data.groups.size, accounts: config.data.accounts.length })
    )
    if (config.demoKey !== undefined) {
      const curl = `curl -N ${address}/v1/responses -H "Authorization: Bearer ${config.demoKey}" ` +
        `-H "Content-Type: application/json" -d '{"model":"gpt-5.4","input":"Hello!","stream":true}'`
      process.stdout.write(
        `\nmodelgate demo mode (no config given): simulator upstreams, no network needed.\n` +
          `  demo key: ${config.demoKey}\n  try:      ${curl}\n\n`
      )
    }
  })
)

/** On SIGTERM/SIGINT: the server stops accepting (runMain closes it); streams get DRAIN_SECONDS to finish. */
const Drain = Layer.effectDiscard(
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    const settings = yield* Settings
    const onSignal = () => Effect.runFork(lifecycle.beginShutdown(settings.drainSeconds))
    process.once("SIGTERM", onSignal)
    process.once("SIGINT", onSignal)
  })
)

/** LOG_LEVEL as Effect spells the levels; `Off` (Effect 3's name for `None`, which earlier releases documented) still silences. */
const logLevel = Config.Literals([...LogLevel.values, "Off"], "LOG_LEVEL").pipe(
  Config.map((level): LogLevel.LogLevel => (level === "Off" ? "None" : level)),
  Config.withDefault<LogLevel.LogLevel>("Info")
)

const LogLevelLive = Layer.unwrap(
  Effect.map(logLevel, (level) => Layer.succeed(References.MinimumLogLevel)(level))
)

// The services are provided outside the HTTP server so they are released after it: the server
// closes (in-flight streams end and settle), then the store writes what is pending and closes.
/**
 * The admin API when ADMIN_PORT is set. Imported statically: a dynamic import() makes esbuild wrap
 * the modules it shares with the rest (effect's core among them) in lazy initialisers, whose
 * mutable bindings cost the hot path (measured: +20-30% CPU per request).
 */
const AdminListener = Layer.unwrap(
  Effect.map(adminListenFromEnv, Option.match({
    onNone: () => Layer.empty,
    onSome: (listen) => Layer.effectDiscard(Layer.build(AdminServer.layer(listen)))
  }))
)

const Main = Layer.mergeAll(Banner, Drain, AdminListener).pipe(
  Layer.provideMerge(GatewayServer.layerConfig),
  // The exporter (when OTEL_EXPORTER_OTLP_ENDPOINT is set) is the server's Tracer, and closes after it: pending spans are sent.
  Layer.provide(Tracing.layerFromEnv),
  Layer.provide(productionServices),
  Layer.provide(Layer.mergeAll(AppConfig.layerConfig, Settings.layerConfig)),
  Layer.provide(JsonLogger.layer),
  Layer.provide(LogLevelLive)
)

NodeRuntime.runMain(Layer.launch(Main), {
  // SIGTERM/SIGINT interrupt the server: that is how it is meant to end, so the exit code is 0.
  teardown: (exit, onExit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
})
