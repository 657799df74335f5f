/**
 * Scheduling settings: failover, cooldowns, sticky sessions, the stream keep-alive and the Redis
 * leases. Read from the environment once at start (docs/scheduling.md lists every variable).
 */
import { Config } from "effect"

export interface SchedulingSettings {
  /** How many times one request may move to another account before the client hears the error. */
  readonly maxSwitches: number
  /** How many requests may wait for a busy account at once; more get 429 at once. */
  readonly accountQueueLimit: number
  /** How long a session stays bound to the account that served it since its last request. */
  readonly stickyTtlSeconds: number
  /** How often a stream request that waits for a slot gets an SSE `: keep-alive` comment. */
  readonly keepAliveMillis: number
  /** A 429 that says nothing about when the limit resets cools the account down this long. */
  readonly rateLimitDefaultSeconds: number
  /** A 429 whose reset is at most this far away is a burst; further away it is an exhausted window. */
  readonly rateLimitBurstSeconds: number
  /** The longest cooldown any reset header can impose (guards against a bogus or far-off date). */
  readonly rateLimitMaxSeconds: number
  /** 529 / overloaded: a short pause, the provider is busy rather than the account limited. */
  readonly overloadSeconds: number
  /** 5xx, timeouts and connect errors are counted: this many within the window cool the account down. */
  readonly serverErrorThreshold: number
  readonly serverErrorWindowSeconds: number
  readonly serverErrorSeconds: number
  /**
   * A refused credential (401, or a 403 that says the credential is bad) cools the account down
   * this long; a second refusal, on another request within the confirm window, takes it out.
   */
  readonly authCooldownSeconds: number
  readonly authConfirmWindowSeconds: number
  /** Every Redis key the scheduler writes starts with this (several gateways may share one Redis). */
  readonly redisKeyPrefix: string
  /** A Redis slot lease lives this long unless renewed; a crashed instance's slots drain within it. */
  readonly redisLeaseMillis: number
}

export const defaultSchedulingSettings: SchedulingSettings = {
  maxSwitches: 2,
  accountQueueLimit: 100,
  stickyTtlSeconds: 3600,
  keepAliveMillis: 5_000,
  rateLimitDefaultSeconds: 30,
  rateLimitBurstSeconds: 60,
  rateLimitMaxSeconds: 24 * 3600,
  overloadSeconds: 30,
  serverErrorThreshold: 3,
  serverErrorWindowSeconds: 60,
  serverErrorSeconds: 30,
  authCooldownSeconds: 60,
  authConfirmWindowSeconds: 900,
  redisKeyPrefix: "modelgate:",
  redisLeaseMillis: 15_000
}

const d = defaultSchedulingSettings
const int = (name: string, fallback: number) => Config.Int(name).pipe(Config.withDefault(fallback))
const num = (name: string, fallback: number) => Config.Number(name).pipe(Config.withDefault(fallback))

export const schedulingConfig: Config.Config<SchedulingSettings> = Config.all({
  maxSwitches: int("UPSTREAM_MAX_SWITCHES", d.maxSwitches),
  accountQueueLimit: int("ACCOUNT_QUEUE_LIMIT", d.accountQueueLimit),
  stickyTtlSeconds: num("STICKY_TTL_SECONDS", d.stickyTtlSeconds),
  keepAliveMillis: int("SSE_KEEPALIVE_MS", d.keepAliveMillis),
  rateLimitDefaultSeconds: num("COOLDOWN_RATE_LIMIT_DEFAULT_SECONDS", d.rateLimitDefaultSeconds),
  rateLimitBurstSeconds: num("COOLDOWN_RATE_LIMIT_BURST_SECONDS", d.rateLimitBurstSeconds),
  rateLimitMaxSeconds: num("COOLDOWN_RATE_LIMIT_MAX_SECONDS", d.rateLimitMaxSeconds),
  overloadSeconds: num("COOLDOWN_OVERLOAD_SECONDS", d.overloadSeconds),
  serverErrorThreshold: int("COOLDOWN_SERVER_ERROR_THRESHOLD", d.serverErrorThreshold),
  serverErrorWindowSeconds: num("COOLDOWN_SERVER_ERROR_WINDOW_SECONDS", d.serverErrorWindowSeconds),
  serverErrorSeconds: num("COOLDOWN_SERVER_ERROR_SECONDS", d.serverErrorSeconds),
  authCooldownSeconds: num("COOLDOWN_AUTH_SECONDS", d.authCooldownSeconds),
  authConfirmWindowSeconds: num("COOLDOWN_AUTH_CONFIRM_WINDOW_SECONDS", d.authConfirmWindowSeconds),
  redisKeyPrefix: Config.String("REDIS_KEY_PREFIX").pipe(Config.withDefault(d.redisKeyPrefix)),
  redisLeaseMillis: int("REDIS_LEASE_MS", d.redisLeaseMillis)
})
