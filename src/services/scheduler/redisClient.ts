/**
 * The scheduler's Redis connections, as scoped resources: one for commands and scripts, one for
 * the release notifications (a subscribed connection can do nothing else).
 *
 * Failure behaviour, chosen on purpose:
 * - at start, Redis unreachable fails the layer with a message naming the address;
 * - later, commands do not queue while Redis is away (no offline queue) and time out after a short
 *   while, so a request that needs Redis fails at once with StoreError (503) instead of hanging;
 *   the client reconnects in the background and requests work again as soon as Redis is back.
 */
import { createHash } from "node:crypto"
import { Effect, type Scope } from "effect"
import type { Redis } from "ioredis"
import { StoreError } from "../../domain/errors.js"

const CONNECT_TIMEOUT_MS = 3_000
const COMMAND_TIMEOUT_MS = 2_000

/** The address without credentials, for messages. */
export const describeRedisUrl = (url: string): string => {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.hostname}${u.port === "" ? "" : `:${u.port}`}${u.pathname === "/" ? "" : u.pathname}`
  } catch {
    return "the configured REDIS_URL"
  }
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

export const redisError = (what: string, e: unknown) =>
  new StoreError({ message: `Redis ${what} failed: ${messageOf(e)}`, cause: e })

/** One connection, closed with the scope; `role` names it in CLIENT LIST. */
export const openConnection = (url: string, role: string): Effect.Effect<Redis, StoreError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        // Loaded on first use, i.e. only with REDIS_URL (it is external to the bundle, so this
        // splits nothing). Imported at start it allocated ~4 MB and kept ~0.9 MB of heap for nothing
        // without Redis, and its allocation often kept V8's memory reducer from giving back the
        // young generation 8 s after start (docs/performance.md, "Where the memory goes").
        const { Redis } = await import("ioredis")
        const client = new Redis(url, {
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          connectTimeout: CONNECT_TIMEOUT_MS,
          commandTimeout: COMMAND_TIMEOUT_MS,
          // Reconnect forever, backing off to 2 s: Redis coming back must not need a restart.
          retryStrategy: (times) => Math.min(times * 100, 2_000),
          // Several requests' commands in one write: less CPU per request under load.
          enableAutoPipelining: true,
          connectionName: `modelgate-${role}`
        })
        // Errors also surface on each command; without a listener ioredis prints every reconnect attempt.
        // The first one is kept: it says why (ECONNREFUSED...) where connect() only says "closed".
        let firstError: unknown
        client.on("error", (e: unknown) => {
          firstError ??= e
        })
        try {
          await client.connect()
          await client.ping()
        } catch (e) {
          client.disconnect()
          throw firstError ?? e
        }
        return client
      },
      catch: (e) =>
        new StoreError({
          message: `Redis at ${describeRedisUrl(url)} is unreachable (${messageOf(e)}). ` +
            "Start Redis, fix REDIS_URL, or unset REDIS_URL to schedule in process (one instance).",
          cause: e
        })
    }),
    (client) =>
      Effect.promise(() =>
        client.quit().then(
          () => undefined,
          () => client.disconnect()
        )
      )
  )

export interface RedisConnections {
  readonly commands: Redis
  readonly subscriber: Redis
}

export const openRedis = (url: string): Effect.Effect<RedisConnections, StoreError, Scope.Scope> =>
  Effect.all({ commands: openConnection(url, "scheduler"), subscriber: openConnection(url, "scheduler-events") })

export interface Script {
  readonly lua: string
  readonly sha: string
}

export const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })

/** Runs a script by its hash, loading it on first use (or after Redis restarted and forgot it). */
export const runScript = (
  client: Redis,
  s: Script,
  keys: ReadonlyArray<string>,
  args: ReadonlyArray<string | number>
): Promise<unknown> =>
  client.evalsha(s.sha, keys.length, ...keys, ...args).catch((e: unknown) => {
    if (messageOf(e).startsWith("NOSCRIPT")) return client.eval(s.lua, keys.length, ...keys, ...args)
    throw e
  })
