/**
 * What the scheduler keeps, and where: the contract between the one scheduling algorithm (core.ts)
 * and its two stores, in-process (memoryStore.ts) and Redis (redisStore.ts). Every operation that
 * several requests race on (taking a slot, joining a queue, counting failures) is one atomic step
 * of the store, so the algorithm above never reads then writes.
 *
 * Times are the store's own clock (milliseconds since the epoch): the Redis store uses the Redis
 * server's, so gateways with skewed clocks agree on cooldowns and leases.
 */
import type { Effect, Scope } from "effect"
import type { StoreError } from "../../domain/errors.js"

/** Slot pools: `account:<name>`, `key:<id>` (a key with its own limit) or `user:<name>`. */
export const accountPool = (name: string) => `account:${name}`

/**
 * The outcome of asking for a slot. A granted slot, or a place in the queue, belongs to the scope
 * it was asked in: closing the scope gives back whichever it holds. `release` gives it back
 * sooner (a failed upstream attempt frees its account at once); after it, or a second time, it
 * and the scope's close do nothing.
 */
export type Entry =
  | { readonly _tag: "Granted"; readonly release: Effect.Effect<void> }
  /** No slot free, and no room in the queue (or no queueing was asked for). */
  | { readonly _tag: "Full" }
  | {
    readonly _tag: "Queued"
    /** Waits up to `millis` for the slot: true once it is held, false when the wait ran out. */
    readonly wait: (millis: number) => Effect.Effect<boolean, StoreError>
    readonly release: Effect.Effect<void>
  }

/** What to record when an account slot is granted, in the same atomic step. */
export interface OnGrant {
  /** Marks the account as just used (least-recently-used ordering). */
  readonly account: string
  /** Binds the session to the account for this long. */
  readonly bind: { readonly session: string; readonly ttlMillis: number } | undefined
}

export interface AccountView {
  readonly inUse: number
  readonly waiting: number
  /** 0 when not cooling down. */
  readonly coolUntil: number
  /** Why it cools down (verdict.ts's reason), when it does and the store knows. */
  readonly coolReason: string | undefined
  /** Set when taken out for an auth failure: the fingerprint of the credentials that failed. */
  readonly disabled: string | undefined
  /** A store-wide counter, higher is more recent; 0 = never. */
  readonly lastUsed: number
}

export interface View {
  readonly now: number
  /** In the order the names were asked for. */
  readonly accounts: ReadonlyArray<AccountView>
  /** The account the session is bound to, if any. */
  readonly sticky: string | undefined
}

export interface PoolStats {
  readonly pool: string
  readonly inUse: number
  readonly waiting: number
}

export interface FailureCount {
  readonly windowMillis: number
  readonly threshold: number
  readonly cooldownMillis: number
  readonly reason: string
}

/** A refused credential: cool down, or take out when an earlier strike is recent enough. */
export interface Strike {
  /** Against which credentials: a strike recorded for older ones does not count. */
  readonly fingerprint: string
  /** An earlier strike at most this old (and for the same credentials) makes this one a take-out. */
  readonly windowMillis: number
  readonly cooldownMillis: number
  readonly reason: string
  /** Kept with a take-out: what the upstream said. */
  readonly detail: string | undefined
}

/** What an operator is shown about an account's state besides its figures. */
export interface AccountNotes {
  /** Why it cools down (the last cooldown's reason), when known. */
  readonly coolReason: string | undefined
  /** Why it is taken out, when it is (for whichever credentials; the caller compares fingerprints). */
  readonly disabledReason: string | undefined
  /** Store time of the take-out; 0 when unknown. */
  readonly disabledAt: number
  readonly disabledDetail: string | undefined
}

export interface SchedulerStore {
  /**
   * Takes a slot of `pool` (at most `limit` held at once), else a place in its queue when fewer than
   * `queueLimit` wait (a negative limit never queues). Requests already waiting go first: a newcomer
   * only takes a slot that no waiter is owed.
   */
  readonly enter: (
    pool: string,
    limit: number,
    queueLimit: number,
    onGrant: OnGrant | undefined
  ) => Effect.Effect<Entry, StoreError, Scope.Scope>
  readonly view: (accounts: ReadonlyArray<string>, session: string | undefined) => Effect.Effect<View, StoreError>
  /** Cools the account down for `millis` from now; never shortens a longer cooldown. */
  readonly coolDown: (account: string, millis: number, reason: string) => Effect.Effect<void, StoreError>
  /** Takes the account out until an operator acts (`reinstate`, or new credentials), noting why and when. */
  readonly disable: (account: string, fingerprint: string, reason: string, detail: string | undefined) => Effect.Effect<void, StoreError>
  /**
   * Records a refused credential in one atomic step: true when an earlier strike within the window
   * (for the same credentials) confirms it and the account is now taken out; otherwise the strike
   * is kept and the account cools down.
   */
  readonly strike: (account: string, rule: Strike) => Effect.Effect<boolean, StoreError>
  /** The reasons behind each account's state, in the order asked (for operators; not on the request path). */
  readonly notes: (accounts: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<AccountNotes>, StoreError>
  /** Counts one failure; true when it reached the threshold and the account now cools down. */
  readonly countFailure: (account: string, rule: FailureCount) => Effect.Effect<boolean, StoreError>
  /** A success: the failure count starts again, and a strike is forgotten. */
  readonly clearFailures: (account: string) => Effect.Effect<void, StoreError>
  /** Drops the session's binding if it still points at `account`. */
  readonly unbind: (session: string, account: string) => Effect.Effect<void, StoreError>
  /** Clears a take-out, a cooldown, a strike and the failure count. */
  readonly reinstate: (account: string) => Effect.Effect<void, StoreError>
  /**
   * Slots in use and requests waiting for the pools this instance has used, plus `include` (listed
   * even when idle). Read without scanning the store's whole keyspace.
   */
  readonly stats: (include: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<PoolStats>, StoreError>
}
