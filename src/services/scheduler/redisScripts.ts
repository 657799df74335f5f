/**
 * The Redis scheduler's Lua scripts. Each runs atomically on the Redis server, which is what makes
 * "read the count, then take a slot" safe across gateways; each reads the clock with TIME, so every
 * gateway agrees on expiries whatever its own clock says.
 *
 * Layout (P = key prefix):
 *   P slot:<pool>    ZSET lease id -> expiry (ms); a member past its expiry is a dead holder's slot
 *   P wait:<pool>    ZSET waiter id -> expiry (ms); waiters refresh theirs each time they poll
 *   P acct:<name>    HASH cool_until, cool_reason, disabled, disabled_reason, disabled_at, disabled_detail,
 *                         last_used, fails, fails_since, strike_at, strike_fp
 *   P sticky:<id>    STRING account name, with the sticky TTL
 *   P lru            STRING counter behind last_used (strict order, unlike clock readings)
 *   P released       pub/sub channel: a pool name, when a slot came free and someone waits for it
 */

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`

/**
 * KEYS: slot, wait, acct, sticky, lru. ARGV: limit, id, leaseMs, queueLimit, poll (0|1),
 * markAccount (0|1), stickyValue, stickyTtlMs (0 = no binding), waiterMs.
 * Returns 1 granted, 0 queued (or still waiting), -1 full.
 *
 * A newcomer only takes a slot no waiter is owed (used + waiting < limit); a polling waiter takes
 * any free slot. A granted account slot also marks the account used and binds the session.
 */
export const ENTER = `${NOW}
local limit = tonumber(ARGV[1])
local leaseMs = tonumber(ARGV[3])
local poll = ARGV[5] == '1'
local waiterMs = tonumber(ARGV[9])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local used = redis.call('ZCARD', KEYS[1])
local waiting = redis.call('ZCARD', KEYS[2])
local free
if poll then free = used < limit else free = used + waiting < limit end
if free then
  redis.call('ZADD', KEYS[1], now + leaseMs, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], leaseMs * 2)
  if poll then redis.call('ZREM', KEYS[2], ARGV[2]) end
  if ARGV[6] == '1' then redis.call('HSET', KEYS[3], 'last_used', redis.call('INCR', KEYS[5])) end
  if tonumber(ARGV[8]) > 0 then redis.call('SET', KEYS[4], ARGV[7], 'PX', ARGV[8]) end
  return 1
end
if not poll and waiting >= tonumber(ARGV[4]) then return -1 end
redis.call('ZADD', KEYS[2], now + waiterMs, ARGV[2])
redis.call('PEXPIRE', KEYS[2], waiterMs * 2)
return 0`

/** KEYS: slot, wait. ARGV: lease id, channel, pool. Frees the slot; tells waiters if there are any. */
export const RELEASE = `local removed = redis.call('ZREM', KEYS[1], ARGV[1])
if removed == 1 and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return removed`

/**
 * KEYS: slot keys. ARGV: leaseMs, then one lease id per key. Pushes each lease's expiry out; a lease
 * that expired meanwhile (Redis was away, or restarted empty) is added back: the request it counts
 * is still running.
 */
export const RENEW = `${NOW}
local leaseMs = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], now + leaseMs, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], leaseMs * 2)
end
return #KEYS`

/**
 * KEYS: acct, slot, wait per account, then the sticky key when ARGV[2] = 1. ARGV: account count,
 * has sticky. Returns now, then per account cool_until, disabled, last_used, in use, waiting
 * (live entries only), failure count (or the time of an unconfirmed strike: something a success
 * clears), cool_reason, then the sticky account ('' for none). Read-only.
 */
export const VIEW = `${NOW}
local n = tonumber(ARGV[1])
local out = { now }
for i = 0, n - 1 do
  local h = redis.call('HMGET', KEYS[i * 3 + 1], 'cool_until', 'disabled', 'last_used', 'fails', 'strike_at', 'cool_reason')
  out[#out + 1] = h[1] or ''
  out[#out + 1] = h[2] or ''
  out[#out + 1] = h[3] or ''
  out[#out + 1] = redis.call('ZCOUNT', KEYS[i * 3 + 2], '(' .. now, '+inf')
  out[#out + 1] = redis.call('ZCOUNT', KEYS[i * 3 + 3], '(' .. now, '+inf')
  out[#out + 1] = h[4] or h[5] or ''
  out[#out + 1] = h[6] or ''
end
if ARGV[2] == '1' then out[#out + 1] = redis.call('GET', KEYS[n * 3 + 1]) or '' end
return out`

/** KEYS: acct. ARGV: millis, reason. Extends the cooldown to now + millis; never shortens it. */
export const COOL_DOWN = `${NOW}
local untilMs = now + tonumber(ARGV[1])
local current = tonumber(redis.call('HGET', KEYS[1], 'cool_until') or '0')
if untilMs > current then redis.call('HSET', KEYS[1], 'cool_until', untilMs, 'cool_reason', ARGV[2]) end
return untilMs`

/**
 * KEYS: acct. ARGV: windowMs, threshold, cooldownMs, reason. Counts a failure in the current window;
 * at the threshold the account cools down and the count starts again. Returns 1 when it cooled down.
 */
export const COUNT_FAILURE = `${NOW}
local fails = tonumber(redis.call('HGET', KEYS[1], 'fails') or '0')
local since = tonumber(redis.call('HGET', KEYS[1], 'fails_since') or '0')
if fails == 0 or now - since > tonumber(ARGV[1]) then
  fails = 0
  since = now
end
fails = fails + 1
if fails >= tonumber(ARGV[2]) then
  local untilMs = now + tonumber(ARGV[3])
  local current = tonumber(redis.call('HGET', KEYS[1], 'cool_until') or '0')
  if untilMs > current then redis.call('HSET', KEYS[1], 'cool_until', untilMs, 'cool_reason', ARGV[4]) end
  redis.call('HDEL', KEYS[1], 'fails', 'fails_since')
  return 1
end
redis.call('HSET', KEYS[1], 'fails', fails, 'fails_since', since)
return 0`

const TAKE_OUT = `redis.call('HSET', KEYS[1], 'disabled', ARGV[1], 'disabled_reason', ARGV[2], 'disabled_at', now,
  'disabled_detail', ARGV[3])
redis.call('HDEL', KEYS[1], 'strike_at', 'strike_fp')`

/** KEYS: acct. ARGV: fingerprint, reason, detail. Takes the account out, noting why and when. */
export const DISABLE = `${NOW}
${TAKE_OUT}
return 1`

/**
 * KEYS: acct. ARGV: fingerprint, reason, detail, windowMs, cooldownMs. A refused credential: when
 * an earlier strike for the same fingerprint is at most windowMs old, takes the account out and
 * returns 1; otherwise records this strike, cools the account down (never shortening a longer
 * cooldown) and returns 0.
 */
export const STRIKE = `${NOW}
local h = redis.call('HMGET', KEYS[1], 'strike_at', 'strike_fp', 'cool_until')
if h[2] == ARGV[1] and now - tonumber(h[1] or '0') <= tonumber(ARGV[4]) then
${TAKE_OUT}
  return 1
end
redis.call('HSET', KEYS[1], 'strike_at', now, 'strike_fp', ARGV[1])
local untilMs = now + tonumber(ARGV[5])
if untilMs > tonumber(h[3] or '0') then redis.call('HSET', KEYS[1], 'cool_until', untilMs, 'cool_reason', ARGV[2]) end
return 0`

/**
 * KEYS: acct per account. Returns per account cool_reason, disabled, disabled_reason, disabled_at,
 * disabled_detail ('' for none). Read-only.
 */
export const NOTES = `local out = {}
for i = 1, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'cool_reason', 'disabled', 'disabled_reason', 'disabled_at', 'disabled_detail')
  for j = 1, 5 do out[#out + 1] = h[j] or '' end
end
return out`

/** KEYS: sticky. ARGV: account. Deletes the binding only if it still names that account. */
export const UNBIND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

/** KEYS: slot or wait keys. Returns the live count of each. Read-only. */
export const COUNT_LIVE = `${NOW}
local out = {}
for i = 1, #KEYS do out[i] = redis.call('ZCOUNT', KEYS[i], '(' .. now, '+inf') end
return out`
