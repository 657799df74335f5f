/**
 * RateLimits on Redis: every gateway on the same Redis and key prefix holds one shared limit. Each
 * decision is one script call (all of a request's limits together, on Redis's clock), so limits do
 * not multiply with replicas and a refusal by one limit charges none of the others.
 *
 * Keys (P = prefix): `P rl:<scope>:<id>:<kind>` HASH u (level), t (ms when set), expiring once drained.
 */
import { Effect, Layer, Redacted, type Scope } from "effect"
import type { StoreError } from "../../domain/errors.js"
import { openConnection, redisError, runScript, script } from "../scheduler/redisClient.js"
import { type BucketStore, makeRateLimits } from "./core.js"
import { RateLimits } from "./RateLimits.js"
import type { Charge, Decision } from "./window.js"

/** The level of bucket KEYS[i] now, drained at `limit` per minute since it was set (as window.ts). */
const LEVEL = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function level(key, limit)
  local b = redis.call('HMGET', key, 'u', 't')
  if not b[1] then return 0 end
  return math.max(0, tonumber(b[1]) - (now - tonumber(b[2])) * limit / 60000)
end
local function store(key, used, limit)
  redis.call('HSET', key, 'u', tostring(used), 't', now)
  redis.call('PEXPIRE', key, math.ceil(used * 60000 / limit) + 1000)
end`

/**
 * KEYS: the buckets. ARGV: limit and cost per bucket, in pairs. Returns {refused index (0 = none),
 * retry-after ms, level after per bucket...} as window.ts's `decide`.
 */
const DECIDE = script(`${LEVEL}
local n = #KEYS
local levels = {}
local refused, wait, never = 0, 0, false
for i = 1, n do
  local limit, cost = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  levels[i] = level(KEYS[i], limit)
  local over = levels[i] + cost - limit
  if over > 0 then
    local w = 60000
    if cost <= limit then w = math.ceil(over * 60000 / limit) end
    -- A charge that can never fit is reported before any wait (as window.ts).
    local cannot = cost > limit
    if refused == 0 or (cannot and not never) or (cannot == never and w > wait) then refused, wait, never = i, w, cannot end
  end
end
local out = { refused, wait }
for i = 1, n do
  local used = levels[i]
  if refused == 0 then
    used = used + tonumber(ARGV[2 * i])
    store(KEYS[i], used, tonumber(ARGV[2 * i - 1]))
  end
  out[i + 2] = tostring(used)
end
return out`)

/** KEYS: one bucket. ARGV: limit, delta. */
const ADJUST = script(`${LEVEL}
local limit = tonumber(ARGV[1])
store(KEYS[1], math.max(0, level(KEYS[1], limit) + tonumber(ARGV[2])), limit)
return 1`)

export interface RedisRateLimitsOptions {
  readonly url: Redacted.Redacted<string> | string
  /** Defaults to `modelgate:` (the scheduler's REDIS_KEY_PREFIX default). */
  readonly prefix?: string
}

const makeRedisBuckets = (options: RedisRateLimitsOptions): Effect.Effect<BucketStore, StoreError, Scope.Scope> =>
  Effect.map(
    openConnection(typeof options.url === "string" ? options.url : Redacted.value(options.url), "ratelimits"),
    (client): BucketStore => {
      const prefix = `${options.prefix ?? "modelgate:"}rl:`
      const keyOf = (c: Charge) => `${prefix}${c.scope}:${c.id}:${c.kind}`
      return {
        decide: (charges) =>
          Effect.tryPromise({
            try: () => runScript(client, DECIDE, charges.map(keyOf), charges.flatMap((c) => [c.limit, c.cost])),
            catch: (e) => redisError("rate limit", e)
          }).pipe(Effect.map((reply): Decision => {
            const values = reply as ReadonlyArray<number | string>
            const refused = Number(values[0])
            const after = charges.map((_, i) => Number(values[i + 2]))
            const charge = charges[refused - 1]
            return charge === undefined
              ? { _tag: "Admitted", after }
              : { _tag: "Refused", charge, retryAfterMillis: Number(values[1]), after }
          })),
        adjust: (charge, delta) =>
          Effect.asVoid(Effect.tryPromise({
            try: () => runScript(client, ADJUST, [keyOf(charge)], [charge.limit, delta]),
            catch: (e) => redisError("rate limit settlement", e)
          }))
      }
    }
  )

/** Fails to build, naming the address, when Redis cannot be reached. */
export const layer = (options: RedisRateLimitsOptions): Layer.Layer<RateLimits, StoreError> =>
  Layer.effect(RateLimits, Effect.map(makeRedisBuckets(options), makeRateLimits))
