/**
 * The Redis scheduler store: what several gateway instances share. Slots are leases (members of a
 * sorted set scored by their expiry): the instance holding one renews it while the request lives,
 * so the slots of a crashed instance drain by themselves within one lease time. Queues are sorted
 * sets of waiters that refresh their own entry while they wait, so a crashed instance's waiters
 * drain too. Scripts and layout: redisScripts.ts.
 *
 * Waiting is polling with a wake-up: a release publishes the pool's name when someone waits for it,
 * and every instance wakes its local waiters for that pool at once; the poll (a few times a second)
 * covers what no one announces (a lease that expired).
 */
import { randomBytes } from "node:crypto"
import { Clock, Duration, Effect, Exit, type Scope } from "effect"
import type { StoreError } from "../../domain/errors.js"
import { openRedis, redisError, runScript, script } from "./redisClient.js"
import { COOL_DOWN, COUNT_FAILURE, COUNT_LIVE, DISABLE, ENTER, NOTES, RELEASE, RENEW, STRIKE, UNBIND, VIEW } from "./redisScripts.js"
import { type AccountNotes, accountPool, type AccountView, type Entry, type PoolStats, type SchedulerStore } from "./store.js"

export interface RedisStoreOptions {
  readonly url: string
  /** Every key starts with it: gateways sharing a prefix share slots, queues, sessions and cooldowns. */
  readonly prefix: string
  readonly leaseMillis: number
}

/** How often a waiter asks again when no release wakes it earlier. */
const POLL_MILLIS = 250
/** A waiter's queue entry lives this long past its last poll. */
const WAITER_MILLIS = 3_000
/** Leases renewed per script call. */
const RENEW_BATCH = 500

const scripts = {
  enter: script(ENTER),
  release: script(RELEASE),
  renew: script(RENEW),
  view: script(VIEW),
  coolDown: script(COOL_DOWN),
  countFailure: script(COUNT_FAILURE),
  disable: script(DISABLE),
  strike: script(STRIKE),
  notes: script(NOTES),
  unbind: script(UNBIND),
  countLive: script(COUNT_LIVE)
}

const FULL: Entry = { _tag: "Full" }

/** What VIEW returns per account. */
const VIEW_FIELDS = 7

const asNumber = (u: unknown): number => {
  if (typeof u === "number") return u
  if (typeof u === "string" && u !== "") {
    const n = Number(u)
    return Number.isFinite(n) ? n : 0
  }
  return 0
}

const asText = (u: unknown): string | undefined => (typeof u === "string" && u !== "" ? u : undefined)

const asArray = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

interface Waiter {
  state: "waiting" | "holding" | "done"
}

export const makeRedisStore = Effect.fnUntraced(function*(options: RedisStoreOptions): Effect.fn.Return<SchedulerStore, StoreError, Scope.Scope> {
  const { commands, subscriber } = yield* openRedis(options.url)
  const P = options.prefix
  const slotKey = (pool: string) => `${P}slot:${pool}`
  const waitKey = (pool: string) => `${P}wait:${pool}`
  const acctKey = (name: string) => `${P}acct:${name}`
  const stickyKey = (session: string) => `${P}sticky:${session}`
  const lruKey = `${P}lru`
  const channel = `${P}released`
  const lease = options.leaseMillis
  const run = (what: string, s: (typeof scripts)[keyof typeof scripts], keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) =>
    Effect.tryPromise({ try: () => runScript(commands, s, keys, args), catch: (e) => redisError(what, e) })
  const command = <A>(what: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => redisError(what, e) })
  // Ids unique across instances and restarts: a random instance tag and a counter.
  const instance = randomBytes(6).toString("hex")
  let seq = 0
  const nextId = () => `${instance}:${(++seq).toString(36)}`
  // Leases this instance holds (id -> slot key), renewed together by one fiber.
  const leases = new Map<string, string>()
  // Accounts whose failure count may be non-zero: only their successes need a write to clear it.
  const failing = new Set<string>()
  // Pools this instance has used: what /metrics reports (with figures from Redis, so cluster-wide).
  const usedPools = new Set<string>()
  // --- wake-ups --------------------------------------------------------------------------------
  const wakers = new Map<string, Set<() => void>>()
  subscriber.on("message", (_channel: string, pool: string) => {
    const set = wakers.get(pool)
    if (set) for (const wake of [...set]) wake()
  })
  yield* command("subscribe", () => subscriber.subscribe(channel))
  /** Until a slot of `pool` is released (announced by any instance). */
  const released = (pool: string) =>
    Effect.callback<void>((resume) => {
      let set = wakers.get(pool)
      if (!set) wakers.set(pool, set = new Set())
      const waiters = set
      const stop = () => {
        waiters.delete(wake)
        if (waiters.size === 0 && wakers.get(pool) === waiters) wakers.delete(pool)
      }
      const wake = () => {
        stop()
        resume(Effect.void)
      }
      waiters.add(wake)
      return Effect.sync(stop)
    })
  /** Sleeps up to `millis` (on the Clock), or less when a slot of `pool` is released. */
  const sleepOrWake = (pool: string, millis: number) => Effect.raceFirst(Effect.sleep(Duration.millis(millis)), released(pool))
  // --- leases ----------------------------------------------------------------------------------
  const release = (id: string, pool: string) =>
    Effect.suspend(() => {
      leases.delete(id)
      return run("slot release", scripts.release, [slotKey(pool), waitKey(pool)], [id, channel, pool])
    }).pipe(
      Effect.catch((e) =>
        Effect.logWarning("Redis slot release failed; the lease expires by itself").pipe(
          Effect.annotateLogs({ pool, error: e.message })
        )
      )
    )
  let renewing = true
  const renewAll = Effect.suspend(() => {
    if (leases.size === 0) return Effect.void
    const all = [...leases]
    const batches: Array<Effect.Effect<unknown, StoreError>> = []
    for (let i = 0; i < all.length; i += RENEW_BATCH) {
      const batch = all.slice(i, i + RENEW_BATCH)
      batches.push(run("lease renewal", scripts.renew, batch.map(([, key]) => key), [lease, ...batch.map(([id]) => id)]))
    }
    return Effect.all(batches, { discard: true })
  }).pipe(
    Effect.tap(() =>
      renewing ? Effect.void : Effect.sync(() => (renewing = true)).pipe(
        Effect.andThen(Effect.logInfo("Redis is back: slot leases renewed again"))
      )
    ),
    Effect.catch((e) =>
      renewing
        ? Effect.sync(() => (renewing = false)).pipe(
          Effect.andThen(Effect.logError("Redis unreachable: slot leases cannot be renewed").pipe(
            Effect.annotateLogs({ error: e.message })
          ))
        )
        : Effect.void
    )
  )
  yield* Effect.forkScoped(
    Effect.forever(Effect.andThen(Effect.sleep(Duration.millis(Math.max(50, Math.floor(lease / 3)))), renewAll))
  )
  // --- queue places ------------------------------------------------------------------------------
  const leave = (w: Waiter, id: string, pool: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const was = w.state
      w.state = "done"
      if (was === "holding") return release(id, pool)
      if (was === "done") return Effect.void
      return command("leave queue", () => commands.zrem(waitKey(pool), id)).pipe(
        Effect.asVoid,
        // The entry stops being refreshed and expires on its own.
        Effect.catch(() => Effect.void)
      )
    })
  const enter: SchedulerStore["enter"] = (pool, limit, queueLimit, onGrant) =>
    Effect.uninterruptible(Effect.gen(function*() {
      usedPools.add(pool)
      const id = nextId()
      const slot = slotKey(pool)
      const bind = onGrant?.bind
      const keys = [
        slot,
        waitKey(pool),
        onGrant === undefined ? slot : acctKey(onGrant.account),
        bind === undefined ? slot : stickyKey(bind.session),
        lruKey
      ]
      const args = (poll: boolean) => [
        limit,
        id,
        lease,
        queueLimit,
        poll ? 1 : 0,
        onGrant === undefined ? 0 : 1,
        onGrant?.account ?? "",
        bind?.ttlMillis ?? 0,
        WAITER_MILLIS
      ]
      const outcome = asNumber(yield* run("slot acquire", scripts.enter, keys, args(false)))
      if (outcome === 1) {
        leases.set(id, slot)
        let held = true
        const giveBack = Effect.suspend(() => {
          if (!held) return Effect.void
          held = false
          return release(id, pool)
        })
        yield* Effect.addFinalizer(() => giveBack)
        return { _tag: "Granted", release: giveBack } satisfies Entry
      }
      if (outcome === -1) return FULL
      const w: Waiter = { state: "waiting" }
      yield* Effect.addFinalizer(() => leave(w, id, pool))
      const pollArgs = args(true)
      const poll = Effect.uninterruptible(
        Effect.flatMap(run("slot wait", scripts.enter, keys, pollArgs), (r) => {
          if (asNumber(r) !== 1) return Effect.void
          if (w.state === "waiting") {
            w.state = "holding"
            leases.set(id, slot)
            return Effect.void
          }
          // Granted after the waiter already left (its scope closed while this poll ran): the
          // slot is nobody's, give it back or it stays taken until its lease runs out.
          return release(id, pool)
        })
      )
      const wait = (millis: number): Effect.Effect<boolean, StoreError> =>
        Effect.gen(function*() {
          // The wait's own deadline is this instance's Clock; leases and queues are on Redis's.
          const deadline = (yield* Clock.currentTimeMillis) + millis
          while (w.state === "waiting") {
            const left = deadline - (yield* Clock.currentTimeMillis)
            if (left <= 0) break
            yield* sleepOrWake(pool, Math.min(left, POLL_MILLIS))
            yield* poll
          }
          if (w.state === "holding") return true
          yield* leave(w, id, pool)
          return false
        }).pipe(Effect.onExit((exit) => (Exit.isFailure(exit) ? leave(w, id, pool) : Effect.void)))
      return { _tag: "Queued", wait, release: leave(w, id, pool) } satisfies Entry
    }))
  return {
    enter,
    view: (names, session) => {
      const keys: Array<string> = []
      for (const name of names) keys.push(acctKey(name), slotKey(accountPool(name)), waitKey(accountPool(name)))
      if (session !== undefined) keys.push(stickyKey(session))
      return Effect.map(run("account view", scripts.view, keys, [names.length, session === undefined ? 0 : 1]), (raw) => {
        const r = asArray(raw)
        const accounts = names.map((name, i): AccountView => {
          const at = 1 + i * VIEW_FIELDS
          if (asNumber(r[at + 5]) > 0) failing.add(name)
          return {
            coolUntil: asNumber(r[at]),
            coolReason: asText(r[at + 6]),
            disabled: asText(r[at + 1]),
            lastUsed: asNumber(r[at + 2]),
            inUse: asNumber(r[at + 3]),
            waiting: asNumber(r[at + 4])
          }
        })
        return { now: asNumber(r[0]), accounts, sticky: session === undefined ? undefined : asText(r[1 + names.length * VIEW_FIELDS]) }
      })
    },
    coolDown: (name, millis, reason) => Effect.asVoid(run("cooldown", scripts.coolDown, [acctKey(name)], [millis, reason])),
    disable: (name, fingerprint, reason, detail) =>
      Effect.asVoid(run("take-out", scripts.disable, [acctKey(name)], [fingerprint, reason, detail ?? ""])),
    strike: (name, rule) =>
      Effect.map(
        run("auth strike", scripts.strike, [acctKey(name)], [
          rule.fingerprint,
          rule.reason,
          rule.detail ?? "",
          rule.windowMillis,
          rule.cooldownMillis
        ]),
        (r) => {
          const takenOut = asNumber(r) === 1
          // An unconfirmed strike is something the next success clears.
          if (!takenOut) failing.add(name)
          return takenOut
        }
      ),
    notes: (names) =>
      names.length === 0
        ? Effect.succeed([])
        : Effect.map(run("account notes", scripts.notes, names.map(acctKey), []), (raw) => {
          const r = asArray(raw)
          return names.map((_, i): AccountNotes => {
            const at = i * 5
            const disabled = asText(r[at + 1]) !== undefined
            return {
              coolReason: asText(r[at]),
              disabledReason: disabled ? asText(r[at + 2]) : undefined,
              disabledAt: disabled ? asNumber(r[at + 3]) : 0,
              disabledDetail: disabled ? asText(r[at + 4]) : undefined
            }
          })
        }),
    countFailure: (name, rule) =>
      Effect.map(
        run("failure count", scripts.countFailure, [acctKey(name)], [
          rule.windowMillis,
          rule.threshold,
          rule.cooldownMillis,
          rule.reason
        ]),
        (r) => {
          const cooled = asNumber(r) === 1
          if (cooled) failing.delete(name)
          else failing.add(name)
          return cooled
        }
      ),
    clearFailures: (name) =>
      Effect.suspend(() => {
        if (!failing.delete(name)) return Effect.void
        return Effect.asVoid(command("failure reset", () => commands.hdel(acctKey(name), "fails", "fails_since", "strike_at", "strike_fp")))
      }),
    unbind: (session, account) => Effect.asVoid(run("sticky unbind", scripts.unbind, [stickyKey(session)], [account])),
    reinstate: (name) =>
      Effect.asVoid(command("reinstate", () =>
        commands.hdel(
          acctKey(name),
          "disabled",
          "disabled_reason",
          "disabled_at",
          "disabled_detail",
          "cool_until",
          "cool_reason",
          "fails",
          "fails_since",
          "strike_at",
          "strike_fp"
        )
      )),
    stats: (include) =>
      Effect.suspend(() => {
        const pools = [...new Set([...usedPools, ...include])]
        if (pools.length === 0) return Effect.succeed([])
        const keys = pools.flatMap((pool) => [slotKey(pool), waitKey(pool)])
        return Effect.map(run("stats", scripts.countLive, keys, []), (raw) => {
          const counts = asArray(raw)
          return pools.map((pool, i): PoolStats => ({
            pool,
            inUse: asNumber(counts[i * 2]),
            waiting: asNumber(counts[i * 2 + 1])
          }))
        })
      })
  } satisfies SchedulerStore
})
