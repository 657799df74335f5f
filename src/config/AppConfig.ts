/**
 * The resolved configuration (groups, users, keys, accounts) and the process settings, as services,
 * so that tests hand in their own and main reads the file/environment once at start.
 */
import { Config, Context, Effect, Layer, Option, Redacted, Result } from "effect"
import { parseSecretKey, type SecretKey } from "../domain/secretBox.js"
import type { ConfigError } from "./load.js"
import { DEMO_KEY, demoConfig } from "./demo.js"
import { configPathFrom, decodeConfig, loadConfigFile } from "./load.js"
import type { GatewayData } from "./resolve.js"
import { defaultSchedulingSettings, type SchedulingSettings, schedulingConfig } from "./scheduling.js"

export interface AppConfigShape {
  readonly data: GatewayData
  /** Where the data came from: a file path, or "demo" when no config was given. */
  readonly source: string
  /** Set in demo mode: the key to print for the newcomer. */
  readonly demoKey: string | undefined
}

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("modelgate/AppConfig") {
  static readonly layer = (data: GatewayData, source = "inline"): Layer.Layer<AppConfig> =>
    Layer.succeed(AppConfig, { data, source, demoKey: undefined })

  /** `--config`, else MODELGATE_CONFIG, else the demo. A bad file fails the start. */
  static readonly layerConfig = Layer.effect(
    AppConfig,
    Effect.suspend((): Effect.Effect<AppConfigShape, ConfigError> => {
      const path = configPathFrom(process.argv.slice(2), process.env)
      if (path !== undefined) {
        return Effect.map(loadConfigFile(path, process.env), (data) => ({ data, source: path, demoKey: undefined }))
      }
      return Effect.map(Effect.fromResult(decodeConfig(demoConfig, "demo", process.env)), (data) => ({
        data,
        source: "demo",
        demoKey: DEMO_KEY
      }))
    })
  )
}

export interface SettingsShape {
  readonly maxBodyBytes: number
  /** How long streams may run on after SIGTERM before they are ended with response.failed. */
  readonly drainSeconds: number
  /** How long a request waits for a key/user concurrency slot before a 429. */
  readonly slotWaitMillis: number
  /** How many requests may wait for a key's slots at once; more get 429 at once. */
  readonly slotQueueLimit: number
  readonly upstreamConnectTimeoutMillis: number
  readonly upstreamFirstByteTimeoutMillis: number
  /** Longest silence between two chunks of an upstream answer before it counts as dead. */
  readonly upstreamIdleTimeoutMillis: number
  /** How long a client may take to send its request headers (slow senders are cut). */
  readonly headerTimeoutMillis: number
  /** How long a client may take to send its whole request, body included. */
  readonly bodyTimeoutMillis: number
  /** Open client connections at most (0: no limit); more are refused by the socket. */
  readonly maxConnections: number
  /** When set, GET /metrics answers only `Authorization: Bearer <token>`. */
  readonly metricsToken: Redacted.Redacted<string> | undefined
  /** How long a stream may wait for a client that takes nothing before it is cut (0: for ever). */
  readonly streamWriteTimeoutMillis: number
  /** The largest JSON answer taken from an upstream; a larger one is a 502, never buffered whole. */
  readonly maxUpstreamBodyBytes: number
  /** The largest upstream SSE event (image results are large); a larger one ends the stream. */
  readonly maxSseEventBytes: number
  /**
   * How far a stream's running cost may pass what its key may still spend (balance, key quota,
   * subscription window) before it is ended with `insufficient_quota`, in micro-dollars.
   */
  readonly streamOverdraftMicros: number
  /** A Responses WebSocket connection's maximum age; then `websocket_connection_limit_reached`. */
  readonly websocketMaxAgeMillis: number
  /**
   * The most a Responses WebSocket connection keeps for `previous_response_id` (about the JSON
   * length of the last response's input and output); a larger transcript is not kept, and naming
   * it is `previous_response_not_found`. Never more than MAX_BODY_BYTES (a turn must fit in one body).
   */
  readonly websocketMaxTranscriptBytes: number
  /** Responses WebSocket connections one key may hold open at once (0: no limit); more get 429 at the handshake. */
  readonly websocketMaxConnectionsPerKey: number
  /** Responses WebSocket connections one user's keys may hold open at once (0: no limit). */
  readonly websocketMaxConnectionsPerUser: number
  /** Local token counts (`count_tokens` on an OpenAI group) one key may have under way at once (0: no limit); more get 429. */
  readonly countTokensConcurrencyPerKey: number
  /** Failover, cooldowns, sticky sessions, keep-alive, Redis leases (docs/scheduling.md). */
  readonly scheduling: SchedulingSettings
}

export const defaultSettings: SettingsShape = {
  maxBodyBytes: 32 * 1024 * 1024,
  drainSeconds: 30,
  slotWaitMillis: 30_000,
  slotQueueLimit: 20,
  upstreamConnectTimeoutMillis: 10_000,
  upstreamFirstByteTimeoutMillis: 300_000,
  upstreamIdleTimeoutMillis: 120_000,
  headerTimeoutMillis: 30_000,
  bodyTimeoutMillis: 60_000,
  maxConnections: 0,
  metricsToken: undefined,
  streamWriteTimeoutMillis: 30_000,
  maxUpstreamBodyBytes: 64 * 1024 * 1024,
  maxSseEventBytes: 64 * 1024 * 1024,
  streamOverdraftMicros: 100_000,
  websocketMaxAgeMillis: 60 * 60_000,
  websocketMaxTranscriptBytes: 8 * 1024 * 1024,
  websocketMaxConnectionsPerKey: 8,
  websocketMaxConnectionsPerUser: 16,
  countTokensConcurrencyPerKey: 4,
  scheduling: defaultSchedulingSettings
}

export class Settings extends Context.Service<Settings, SettingsShape>()("modelgate/Settings") {
  static readonly layer = (overrides: Partial<SettingsShape> = {}): Layer.Layer<Settings> =>
    Layer.succeed(Settings, { ...defaultSettings, ...overrides })

  static readonly layerConfig = Layer.effect(
    Settings,
    Config.all({
      maxBodyBytes: Config.Int("MAX_BODY_BYTES").pipe(Config.withDefault(defaultSettings.maxBodyBytes)),
      websocketMaxAgeMillis: Config.Number("WEBSOCKET_MAX_AGE_MINUTES").pipe(
        Config.map((minutes) => minutes * 60_000),
        Config.withDefault(defaultSettings.websocketMaxAgeMillis)
      ),
      websocketMaxTranscriptBytes: Config.Int("WEBSOCKET_MAX_TRANSCRIPT_BYTES").pipe(
        Config.withDefault(defaultSettings.websocketMaxTranscriptBytes)
      ),
      websocketMaxConnectionsPerKey: Config.Int("WEBSOCKET_MAX_CONNECTIONS_PER_KEY").pipe(
        Config.withDefault(defaultSettings.websocketMaxConnectionsPerKey)
      ),
      websocketMaxConnectionsPerUser: Config.Int("WEBSOCKET_MAX_CONNECTIONS_PER_USER").pipe(
        Config.withDefault(defaultSettings.websocketMaxConnectionsPerUser)
      ),
      countTokensConcurrencyPerKey: Config.Int("COUNT_TOKENS_CONCURRENCY_PER_KEY").pipe(
        Config.withDefault(defaultSettings.countTokensConcurrencyPerKey)
      ),
      drainSeconds: Config.Number("DRAIN_SECONDS").pipe(Config.withDefault(defaultSettings.drainSeconds)),
      slotWaitMillis: Config.Int("SLOT_WAIT_MS").pipe(Config.withDefault(defaultSettings.slotWaitMillis)),
      slotQueueLimit: Config.Int("SLOT_QUEUE_LIMIT").pipe(Config.withDefault(defaultSettings.slotQueueLimit)),
      upstreamConnectTimeoutMillis: Config.Int("UPSTREAM_CONNECT_TIMEOUT_MS").pipe(
        Config.withDefault(defaultSettings.upstreamConnectTimeoutMillis)
      ),
      upstreamFirstByteTimeoutMillis: Config.Int("UPSTREAM_FIRST_BYTE_TIMEOUT_MS").pipe(
        Config.withDefault(defaultSettings.upstreamFirstByteTimeoutMillis)
      ),
      upstreamIdleTimeoutMillis: Config.Int("UPSTREAM_IDLE_TIMEOUT_MS").pipe(
        Config.withDefault(defaultSettings.upstreamIdleTimeoutMillis)
      ),
      headerTimeoutMillis: Config.Int("HEADER_TIMEOUT_MS").pipe(Config.withDefault(defaultSettings.headerTimeoutMillis)),
      bodyTimeoutMillis: Config.Int("BODY_TIMEOUT_MS").pipe(Config.withDefault(defaultSettings.bodyTimeoutMillis)),
      maxConnections: Config.Int("MAX_CONNECTIONS").pipe(Config.withDefault(defaultSettings.maxConnections)),
      maxUpstreamBodyBytes: Config.Int("MAX_UPSTREAM_BODY_BYTES").pipe(
        Config.withDefault(defaultSettings.maxUpstreamBodyBytes)
      ),
      metricsToken: Config.option(Config.Redacted("METRICS_TOKEN")).pipe(
        Config.map((token) => Option.getOrUndefined(Option.filter(token, (t) => Redacted.value(t) !== "")))
      ),
      streamWriteTimeoutMillis: Config.Int("STREAM_WRITE_TIMEOUT_MS").pipe(
        Config.withDefault(defaultSettings.streamWriteTimeoutMillis)
      ),
      maxSseEventBytes: Config.Int("MAX_SSE_EVENT_BYTES").pipe(Config.withDefault(defaultSettings.maxSseEventBytes)),
      streamOverdraftMicros: Config.Number("STREAM_OVERDRAFT_USD").pipe(
        Config.map((usd) => Math.round(usd * 1_000_000)),
        Config.withDefault(defaultSettings.streamOverdraftMicros)
      ),
      scheduling: schedulingConfig
    })
  )
}

/**
 * The keys of upstream accounts an operator adds at run time (admin API, CLI). A Reference whose
 * default is none of them: a process that was not given MODELGATE_SECRET_KEY refuses to store a
 * key, and admits no api_key_env through the admin API.
 */
export interface AccountKeySettingsShape {
  /** MODELGATE_SECRET_KEY: seals the keys stored in the database (AES-256-GCM); unset: storing one is refused. */
  readonly secretKey: SecretKey | undefined
  /** MODELGATE_SECRET_KEY_PREVIOUS: still opens keys sealed under it, while `modelgate accounts rotate-key` re-seals them. */
  readonly previousSecretKey: SecretKey | undefined
  /**
   * ADMIN_ACCOUNT_ENV_PREFIX: an account added through the admin API may name an environment
   * variable for its key (api_key_env) only when the name starts with this; unset: never (the admin
   * token must not be able to send DATABASE_URL or ADMIN_TOKEN to a host of its choosing).
   */
  readonly accountEnvPrefix: string | undefined
}

export const noAccountKeySettings: AccountKeySettingsShape = {
  secretKey: undefined,
  previousSecretKey: undefined,
  accountEnvPrefix: undefined
}

export const AccountKeySettings: Context.Reference<AccountKeySettingsShape> = Context.Reference<AccountKeySettingsShape>(
  "modelgate/AccountKeySettings",
  { defaultValue: () => noAccountKeySettings }
)

const optionalSetting = (name: string) =>
  Config.option(Config.String(name)).pipe(Effect.map((v) => Option.getOrUndefined(Option.filter(v, (t) => t.trim() !== ""))))

/** The settings from the environment; a secret key that is not 32 bytes fails with a sentence that never repeats it. */
export const accountKeySettingsFromEnv: Effect.Effect<AccountKeySettingsShape, Config.ConfigError | Error> = Effect.gen(function*() {
  const keyOf = Effect.fnUntraced(function*(name: string) {
    const text = yield* optionalSetting(name)
    if (text === undefined) return undefined
    const parsed = parseSecretKey(text, name)
    if (Result.isFailure(parsed)) return yield* Effect.fail(new Error(parsed.failure))
    return parsed.success
  })
  const secretKey = yield* keyOf("MODELGATE_SECRET_KEY")
  const previousSecretKey = yield* keyOf("MODELGATE_SECRET_KEY_PREVIOUS")
  if (previousSecretKey !== undefined && secretKey === undefined) {
    return yield* Effect.fail(new Error("MODELGATE_SECRET_KEY_PREVIOUS is set without MODELGATE_SECRET_KEY: set the new key as MODELGATE_SECRET_KEY"))
  }
  return { secretKey, previousSecretKey, accountEnvPrefix: (yield* optionalSetting("ADMIN_ACCOUNT_ENV_PREFIX"))?.trim() }
})

export const accountKeySettingsLayer = (settings: Partial<AccountKeySettingsShape>): Layer.Layer<never> =>
  Layer.succeed(AccountKeySettings, { ...noAccountKeySettings, ...settings })

export const accountKeySettingsLayerConfig: Layer.Layer<never, Config.ConfigError | Error> = Layer.effect(
  AccountKeySettings,
  accountKeySettingsFromEnv
)
