/**
 * The in-process scheduler store: slots in SlotPools, account state and sticky bindings in maps.
 * Everything here runs synchronously on the one JavaScript thread, which is what makes each
 * operation atomic. Right for one gateway instance; several share nothing (use the Redis store).
 * Time (cooldowns, sticky TTLs, failure windows) is read from the Clock, so TestClock drives it.
 */
import { Clock, Effect } from "effect"
import { SlotPools } from "./slots.js"
import {
  accountPool,
  type AccountNotes,
  type AccountView,
  type Entry,
  type FailureCount,
  type OnGrant,
  type SchedulerStore,
  type View
} from "./store.js"

interface AccountState {
  coolUntil: number
  coolReason: string | undefined
  disabled: string | undefined
  disabledReason: string | undefined
  disabledAt: number
  disabledDetail: string | undefined
  lastUsed: number
  failures: number
  failuresSince: number
  /** The last refused credential not yet confirmed: when, and for which credentials. */
  strikeAt: number
  strikeFingerprint: string | undefined
}

interface Binding {
  readonly account: string
  readonly expiresAt: number
}

/** Sticky bindings are swept of expired entries when the map grows past this (amortised). */
const STICKY_SWEEP_AT = 10_000

export const makeMemoryStore = (): SchedulerStore => {
  const slots = new SlotPools()
  const accounts = new Map<string, AccountState>()
  const sticky = new Map<string, Binding>()
  let tick = 0
  let sweepAt = STICKY_SWEEP_AT

  const state = (name: string): AccountState => {
    let s = accounts.get(name)
    if (!s) {
      accounts.set(name, s = {
        coolUntil: 0,
        coolReason: undefined,
        disabled: undefined,
        disabledReason: undefined,
        disabledAt: 0,
        disabledDetail: undefined,
        lastUsed: 0,
        failures: 0,
        failuresSince: 0,
        strikeAt: 0,
        strikeFingerprint: undefined
      })
    }
    return s
  }

  const bind = (session: string, account: string, ttlMillis: number, now: number) => {
    sticky.set(session, { account, expiresAt: now + ttlMillis })
    if (sticky.size >= sweepAt) {
      for (const [k, b] of sticky) if (b.expiresAt <= now) sticky.delete(k)
      sweepAt = Math.max(STICKY_SWEEP_AT, sticky.size * 2)
    }
  }

  const granted = (onGrant: OnGrant, now: number) => {
    state(onGrant.account).lastUsed = ++tick
    if (onGrant.bind !== undefined) bind(onGrant.bind.session, onGrant.account, onGrant.bind.ttlMillis, now)
  }

  const enter = (pool: string, limit: number, queueLimit: number, onGrant: OnGrant | undefined) => {
    // Key and user slots record nothing on grant: no clock to read.
    if (onGrant === undefined) return slots.enter(pool, limit, queueLimit)
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.map(slots.enter(pool, limit, queueLimit), (entry): Entry => {
        if (entry._tag === "Granted") granted(onGrant, now)
        if (entry._tag !== "Queued") return entry
        return {
          _tag: "Queued",
          wait: (millis) =>
            Effect.tap(entry.wait(millis), (held) =>
              held ? Effect.map(Clock.currentTimeMillis, (at) => granted(onGrant, at)) : Effect.void),
          release: entry.release
        }
      }))
  }

  const coolDownNow = (name: string, millis: number, reason: string, now: number) => {
    const s = state(name)
    if (now + millis > s.coolUntil) {
      s.coolUntil = now + millis
      s.coolReason = reason
    }
  }

  const disableNow = (name: string, fingerprint: string, reason: string, detail: string | undefined, now: number) => {
    const s = state(name)
    s.disabled = fingerprint
    s.disabledReason = reason
    s.disabledAt = now
    s.disabledDetail = detail
    s.strikeAt = 0
    s.strikeFingerprint = undefined
  }

  return {
    enter,

    view: (names, session) =>
      Effect.map(Clock.currentTimeMillis, (now): View => {
        const views = names.map((name): AccountView => {
          const s = accounts.get(name)
          const pool = slots.stats(accountPool(name))
          return {
            inUse: pool.inUse,
            waiting: pool.waiting,
            coolUntil: s?.coolUntil ?? 0,
            coolReason: s?.coolReason,
            disabled: s?.disabled,
            lastUsed: s?.lastUsed ?? 0
          }
        })
        let bound: string | undefined
        if (session !== undefined) {
          const b = sticky.get(session)
          if (b !== undefined && b.expiresAt > now) bound = b.account
          else if (b !== undefined) sticky.delete(session)
        }
        return { now, accounts: views, sticky: bound }
      }),

    coolDown: (name, millis, reason) => Effect.map(Clock.currentTimeMillis, (now) => coolDownNow(name, millis, reason, now)),

    disable: (name, fingerprint, reason, detail) =>
      Effect.map(Clock.currentTimeMillis, (now) => disableNow(name, fingerprint, reason, detail, now)),

    strike: (name, rule) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const s = state(name)
        if (s.strikeFingerprint === rule.fingerprint && now - s.strikeAt <= rule.windowMillis) {
          disableNow(name, rule.fingerprint, rule.reason, rule.detail, now)
          return true
        }
        s.strikeAt = now
        s.strikeFingerprint = rule.fingerprint
        coolDownNow(name, rule.cooldownMillis, rule.reason, now)
        return false
      }),

    notes: (names) =>
      Effect.sync(() =>
        names.map((name): AccountNotes => {
          const s = accounts.get(name)
          return {
            coolReason: s?.coolReason,
            disabledReason: s?.disabled === undefined ? undefined : s.disabledReason,
            disabledAt: s?.disabled === undefined ? 0 : s.disabledAt,
            disabledDetail: s?.disabled === undefined ? undefined : s.disabledDetail
          }
        })
      ),

    countFailure: (name, rule: FailureCount) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const s = state(name)
        if (s.failures === 0 || now - s.failuresSince > rule.windowMillis) {
          s.failures = 0
          s.failuresSince = now
        }
        s.failures++
        if (s.failures < rule.threshold) return false
        s.failures = 0
        coolDownNow(name, rule.cooldownMillis, rule.reason, now)
        return true
      }),

    clearFailures: (name) =>
      Effect.sync(() => {
        const s = accounts.get(name)
        if (s !== undefined) {
          s.failures = 0
          s.strikeAt = 0
          s.strikeFingerprint = undefined
        }
      }),

    unbind: (session, account) =>
      Effect.sync(() => {
        if (sticky.get(session)?.account === account) sticky.delete(session)
      }),

    reinstate: (name) =>
      Effect.sync(() => {
        const s = state(name)
        s.disabled = undefined
        s.disabledReason = undefined
        s.disabledAt = 0
        s.disabledDetail = undefined
        s.coolUntil = 0
        s.coolReason = undefined
        s.failures = 0
        s.strikeAt = 0
        s.strikeFingerprint = undefined
      }),

    stats: (include) =>
      Effect.sync(() => {
        const all = slots.all()
        const listed = new Set(all.map((p) => p.pool))
        for (const pool of include) if (!listed.has(pool)) all.push({ pool, inUse: 0, waiting: 0 })
        return all
      })
  }
}
