/**
 * Entry point: check the environment, read config and settings, build the services, serve HTTP,
 * drain on SIGTERM. A start an operator can fix (a bad config file, a busy port) fails with a
 * sentence saying what to change (config/startup.ts), not a stack.
 */
import "./v8Flags.js" // first: GC settings for the whole process
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, Layer, Option, References, Runtime } from "effect"
import { AdminServer } from "./admin/AdminServer.js"
import { adminListenFromEnv } from "./admin/listen.js"
import { accountKeySettingsLayerConfig, AppConfig, Settings } from "./config/AppConfig.js"
import { demoConfig } from "./config/demo.js"
import { checkEnvironment, type LogSettings, StartupFailed, startupFailureText } from "./config/startup.js"
import type { Platform } from "./domain/config.js"
import { productionServices } from "./layers.js"
import * as ProcessLog from "./observability/logger.js"
import * as Tracing from "./observability/tracing.js"
import { GatewayServer } from "./server/GatewayServer.js"
import { Lifecycle } from "./services/lifecycle/Lifecycle.js"

/** A model for the banner's examples: `preferred` when the group offers it, else the group's first. */
const modelFor = (models: ReadonlyArray<string> | undefined, fallback: ReadonlyArray<string>, preferred: string) => {
  const list = models !== undefined && models.length > 0 ? models : fallback
  return list.includes(preferred) ? preferred : (list[0] ?? preferred)
}

/** Prints how to try the demo when no config was given: both demo keys, a curl for the Responses door, Claude Code for the Messages door. */
const Banner = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const address = (yield* GatewayServer).url
    yield* Effect.logInfo("modelgate listening").pipe(
      Effect.annotateLogs({ address, config: config.source, groups: config.data.groups.size, accounts: config.data.accounts.length })
    )
    if (config.demoKey === undefined) return
    const keyOf = (platform: Platform) => {
      const key = (demoConfig.keys ?? []).find((k) => config.data.groups.get(k.group)?.platform === platform)
      const group = key === undefined ? undefined : config.data.groups.get(key.group)
      return { key: key?.key, group: key?.group, models: group?.models }
    }
    const openai = keyOf("openai")
    const anthropic = keyOf("anthropic")
    const gpt = modelFor(openai.models, config.data.defaultModels.openai, "gpt-5.4")
    const claude = modelFor(anthropic.models, config.data.defaultModels.anthropic, "claude-sonnet-4-6")
    const curl = `curl -sN ${address}/v1/responses -H "Authorization: Bearer ${openai.key ?? config.demoKey}" ` +
      `-H "Content-Type: application/json" -d '{"model":"${gpt}","input":"Hello!","stream":true}'`
    const lines = [
      "",
      "modelgate demo mode (no config given): simulator upstreams, no network needed.",
      `  demo key:      ${openai.key ?? config.demoKey}  (group ${openai.group ?? "?"}: OpenAI models, e.g. ${gpt})`
    ]
    if (anthropic.key !== undefined) {
      lines.push(`  anthropic key: ${anthropic.key}  (group ${anthropic.group ?? "?"}: Anthropic models, e.g. ${claude})`)
    }
    lines.push(`  try:           ${curl}`)
    if (anthropic.key !== undefined) {
      lines.push(`  Claude Code:   ANTHROPIC_BASE_URL=${address} ANTHROPIC_API_KEY=${anthropic.key} npx claude -p "hello" --model ${claude}`)
    }
    process.stdout.write(`${lines.join("\n")}\n\n`)
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

const Main = (log: LogSettings) =>
  Layer.mergeAll(Banner, Drain, AdminListener).pipe(
    Layer.provideMerge(GatewayServer.layerConfig),
    // The exporter (when OTEL_EXPORTER_OTLP_ENDPOINT is set) is the server's Tracer, and closes after it: pending spans are sent.
    Layer.provide(Tracing.layerFromEnv),
    Layer.provide(productionServices),
    Layer.provide(Layer.mergeAll(AppConfig.layerConfig, Settings.layerConfig, accountKeySettingsLayerConfig)),
    Layer.provide(ProcessLog.layerFor(log.format)),
    Layer.provide(Layer.succeed(References.MinimumLogLevel)(log.level))
  )

// The environment is checked first: a wrong PORT or LOG_LEVEL is reported before a database is opened.
const program = Effect.flatMap(checkEnvironment(process.env, adminListenFromEnv), (log) => Layer.launch(Main(log))).pipe(
  Effect.catchCause((cause) => {
    const text = Cause.hasInterruptsOnly(cause) ? undefined : startupFailureText(cause, process.env)
    if (text === undefined) return Effect.failCause(cause)
    return Effect.andThen(
      Effect.sync(() => process.stderr.write(`${text}\n`)),
      Effect.fail(new StartupFailed(text))
    )
  })
)

NodeRuntime.runMain(program, {
  // SIGTERM/SIGINT interrupt the server: that is how it is meant to end, so the exit code is 0.
  teardown: (exit, onExit) =>
    Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
})
