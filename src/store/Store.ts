/**
 * Store: the SQL-backed state behind the SQL KeyRepo, Quota and UpstreamAccounts (keyRepoSql.ts,
 * quotaSql.ts, upstreamAccountsSql.ts), shared so that a settlement can refresh what the key lookup
 * and the eligibility check have cached.
 *
 * Hot path: a key lookup and the eligibility figures come from in-process caches (Effect's Cache:
 * TTL `cacheTtlMillis`, STORE_CACHE_TTL_MS; LRU at `cacheCapacity`), so a request normally costs no
 * database round trip before the upstream call. Settlements are queued to the writer (writer.ts),
 * which commits them in batches, on a SQLite file from a thread of its own (writerThread.ts); the
 * rows a batch changed are read back (RETURNING) into the caches, and a key whose status flipped
 * (quota used up) is dropped from the lookup cache. The TTL bounds how long a change made elsewhere
 * (another instance) takes to be seen; an operator's change here drops the caches at once
 * (`forgetCached`).
 */
import { Cache, Clock, Config, Context, Duration, Effect, Exit, Latch, Layer, Option, Schedule, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { StoreError } from "../domain/errors.js"
import { AccountKeySettings, AppConfig } from "../config/AppConfig.js"
import type { Account, Micros, Principal } from "../domain/model.js"
import type { TokenUsage } from "../domain/usage.js"
import { charge, packagePrices } from "../domain/pricing.js"
import type { SubscriptionFigures } from "../domain/subscription.js"
import type { UsageSnapshot } from "../domain/usageReport.js"
import type { Settlement } from "../domain/settlement.js"
import type { Charged, DayRange, EligibilityFigures } from "../services/quota/Quota.js"
import { dialectOf, sqlClientLayer, sqlitePragmas } from "./client.js"
import { operatorAccounts } from "./accounts.js"
import { migrate } from "./migrate.js"
import { reportOrphans } from "./orphans.js"
import { balanceOf, keyFigures, priceOverrides, principalByHash, subscriptionOf } from "./queries.js"
import { loadSnapshot } from "./report.js"
import { orStoreError } from "./rows.js"
import { InFlight, subscriptionId as subKey } from "./inFlight.js"
import {
  type BatchRunner,
  type Committed,
  makeWriter,
  type OpenMarker,
  runOnConnection,
  runOnThread,
  type SettleItem
} from "./writer.js"
import { SqliteClient } from "./sqliteClient.js"
import { sqliteTarget } from "./target.js"
import { startWriterThread } from "./writerThread.js"

export interface StoreShape {
  readonly findPrincipal: (sha256: string) => Effect.Effect<Option.Option<Principal>, StoreError>
  readonly figures: (principal: Principal) => Effect.Effect<EligibilityFigures, StoreError>
  /** What `usage` of `model` costs at the prices in force (the operator's, the file's, the package's; the file's per-call tool prices). */
  readonly costOf: (model: string, usage: TokenUsage, rateMultiplier: number) => Micros
  /** Exactly once per request id; resolves when the settlement is committed, with the cost charged (0 if seen before). */
  readonly settle: (s: Settlement) => Effect.Effect<Charged, StoreError>
  readonly track: (requestId: string, principal: Principal, model: string) => Effect.Effect<void, never, Scope.Scope>
  readonly snapshot: (principal: Principal, range: DayRange, now: Date) => Effect.Effect<UsageSnapshot, StoreError>
  /** Resolves when every settlement accepted so far is committed. */
  readonly flush: Effect.Effect<void>
  /**
   * Drops every cached key, quota, balance and subscription: the next request reads the database.
   * For operator changes (a key revoked, a balance set), which must not wait for the TTL.
   */
  readonly forgetCached: Effect.Effect<void>
  /**
   * The upstream accounts: the config file's, then those an operator added (store/accounts.ts).
   * A new array after each reload (forgetCached), the same one until then.
   */
  readonly accounts: () => ReadonlyArray<Account>
}

export interface StoreOptions {
  readonly cacheTtlMillis: number
  readonly cacheCapacity: number
  /** Most settlements written in one transaction. */
  readonly maxBatch: number
  /** Log requests left open by an earlier process (the server does; the CLI must not). */
  readonly reportOrphans: boolean
  /** On PostgreSQL (shared by instances), an open request is only an orphan after this long. */
  readonly orphanAfterMillis: number
  /** How long shutdown waits for pending settlements to be written. */
  readonly flushTimeoutMillis: number
  /**
   * A request's open marker is written once it has run this long. Shorter requests settle first
   * and never cost a write for it; real upstream calls take longer, so they are covered.
   */
  readonly openMarkerDelayMillis: number
  /**
   * On a SQLite file, write settlement batches from a thread of their own (writerThread.ts) rather
   * than on the event loop. PostgreSQL and in-memory SQLite always write on their connection.
   */
  readonly writerThread: boolean
}

export const defaultStoreOptions: StoreOptions = {
  // Also how long another instance may serve a key revoked elsewhere if the Redis nudge is lost.
  cacheTtlMillis: 1_000,
  cacheCapacity: 10_000,
  maxBatch: 256,
  reportOrphans: true,
  orphanAfterMillis: 60 * 60_000,
  flushTimeoutMillis: 30_000,
  openMarkerDelayMillis: 100,
  writerThread: true
}

/**
 * Where batches are written. The SQLite client, when that is the store, is in the context beside
 * the SqlClient (its layer provides both): its file name is what the writer thread opens.
 */
const batchRunner = Effect.fnUntraced(function*(sql: SqlClient.SqlClient, options: StoreOptions): Effect.fn.Return<BatchRunner, never, Scope.Scope> {
  const sqlite = yield* Effect.serviceOption(SqliteClient)
  if (!options.writerThread || Option.isNone(sqlite) || sqlite.value.config.filename === ":memory:") {
    return runOnConnection(sql)
  }
  const thread = yield* startWriterThread({ filename: sqlite.value.config.filename, pragmas: sqlitePragmas })
  return runOnThread(thread)
})

const make = Effect.fnUntraced(function*(options: StoreOptions) {
  const sql = yield* SqlClient.SqlClient
  // Time is the fiber's Clock (a TestClock in tests): cache TTLs, open markers, orphan cut-offs.
  const clock = yield* Clock.Clock
  const now = () => clock.currentTimeMillisUnsafe()
  // Reloaded when an operator changes something (forgetCached), so a price set through the admin API applies at once.
  let prices = yield* priceOverrides.pipe(orStoreError("loading prices failed"))
  const { data } = yield* AppConfig
  const withOperators = (added: ReadonlyArray<Account>): ReadonlyArray<Account> =>
    added.length === 0 ? data.accounts : [...data.accounts, ...added.filter((a) => !data.accounts.some((c) => c.name === a.name))]
  // The keys that open an operator's stored account keys, read once: the process's settings.
  const { previousSecretKey, secretKey } = yield* AccountKeySettings
  const loadOperatorAccounts = operatorAccounts([secretKey, previousSecretKey].filter((k) => k !== undefined))
  let accounts = withOperators(yield* loadOperatorAccounts.pipe(orStoreError("loading accounts failed")))
  const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
    Effect.provideService(effect, SqlClient.SqlClient, sql)
  // Effect's Cache: the TTL on the fiber's Clock, LRU at the capacity, concurrent misses of a key
  // share one lookup, and a failed lookup is not kept (a TTL of zero for failures).
  const ttl = Duration.millis(options.cacheTtlMillis)
  const cache = <K, V>(message: string, lookup: (k: K) => Effect.Effect<V, unknown, SqlClient.SqlClient>) =>
    Cache.makeWith((k: K) => withSql(lookup(k)).pipe(orStoreError(message)), {
      capacity: options.cacheCapacity,
      timeToLive: (exit) => (Exit.isFailure(exit) ? Duration.zero : ttl)
    })
  const principals = yield* cache("looking up an API key failed", principalByHash)
  const keys = yield* cache("reading a key's quota failed", keyFigures)
  const balances = yield* cache("reading a balance failed", balanceOf)
  const subscriptions = yield* cache("reading a subscription failed", (id: string) => {
    const [user = "", group = ""] = id.split("\u0000")
    return subscriptionOf(user, group)
  })
  const hashOfKey = new Map<string, string>()
  const inFlight = new InFlight<SettleItem>()
  const forget = (items: ReadonlyArray<SettleItem>) => {
    for (const s of items) inFlight.remove(s)
  }
  // The caches take the committed figures first, then the costs stop counting as in flight: no
  // step between them waits on anything, and were the fiber to yield there, a check would count
  // a cost twice (refuse early), never miss it.
  const onBatch = (c: Committed | undefined, settles: ReadonlyArray<SettleItem>, repeats: ReadonlyArray<SettleItem>) => {
    if (c === undefined) {
      forget(settles)
      forget(repeats)
      return Effect.void
    }
    return Effect.gen(function*() {
      for (const b of c.balances) yield* Cache.set(balances, b.user, b.balanceMicros)
      for (const k of c.keys) {
        yield* Cache.set(keys, k.id, Option.some({ status: k.status, quotaUsedMicros: k.quotaUsedMicros }))
        const hash = hashOfKey.get(k.id)
        if (hash === undefined) continue
        const cached = Option.flatten(yield* Cache.getSuccess(principals, hash))
        // The status is part of what auth and /v1/usage read: a flip must not wait for the TTL.
        if (Option.isSome(cached) && cached.value.key.status !== k.status) yield* Cache.invalidate(principals, hash)
      }
      for (const s of c.subscriptions) {
        const id = subKey(s.user, s.group)
        const cached = Option.flatten(yield* Cache.getSuccess(subscriptions, id))
        if (Option.isSome(cached)) yield* Cache.set(subscriptions, id, Option.some({ ...cached.value, spends: s.spends }))
      }
      forget(settles)
      forget(repeats)
    })
  }
  // Requests tracked and not yet settled or ended, with whether their marker has been written.
  const tracked = new Map<string, { readonly marker: OpenMarker; written: boolean }>()
  const dueMarkers = () => {
    const due: Array<OpenMarker> = []
    const before = now() - options.openMarkerDelayMillis
    for (const entry of tracked.values()) {
      if (!entry.written && entry.marker.at <= before) {
        entry.written = true
        due.push(entry.marker)
      }
    }
    return due
  }
  // The thread is released after the writer's last flush (finalizers run in reverse order).
  const runBatch = yield* batchRunner(sql, options)
  const writer = yield* makeWriter({ maxBatch: options.maxBatch, runBatch, onBatch, dueMarkers })
  let closed = false
  // Markers due while no settlement comes along to carry them are written on a tick. The tick
  // runs only while some marker is unwritten (`track` opens the latch, a tick that finds none
  // closes it): an idle gateway does not wake 20 times a second. Polling at idle made ~0.7 MB/s
  // of garbage, which grew RSS by ~1 MB/s after start until V8's memory reducer ran, and counts
  // against the low allocation rate that reducer waits for (docs/performance.md, "Where the memory goes").
  const markersPending = yield* Latch.make(false)
  const markerTick = Effect.sync(() => {
    const before = now() - options.openMarkerDelayMillis
    let unwritten = false
    for (const entry of tracked.values()) {
      if (entry.written) continue
      if (entry.marker.at <= before) return writer.enqueue({ _tag: "Tick" })
      unwritten = true
    }
    if (!unwritten) markersPending.closeUnsafe()
  })
  yield* markersPending.await.pipe(
    Effect.andThen(Effect.sleep(Duration.millis(Math.max(10, options.openMarkerDelayMillis / 2)))),
    Effect.andThen(markerTick),
    Effect.forever,
    Effect.forkScoped
  )
  if (options.reportOrphans) {
    // SQLite belongs to one process: anything open from before this start is an orphan.
    const startedAt = now()
    const firstCutoff = dialectOf(sql) === "sqlite" ? startedAt : startedAt - options.orphanAfterMillis
    yield* withSql(reportOrphans(firstCutoff)).pipe(
      Effect.catchCause((cause) => Effect.logWarning("could not check for unsettled requests", cause))
    )
    yield* withSql(Effect.suspend(() => reportOrphans(now() - options.orphanAfterMillis))).pipe(
      Effect.catchCause((cause) => Effect.logWarning("could not check for unsettled requests", cause)),
      Effect.repeat(Schedule.spaced(Duration.millis(Math.max(60_000, options.orphanAfterMillis / 6)))),
      Effect.delay(Duration.millis(Math.max(60_000, options.orphanAfterMillis / 6))),
      Effect.forkScoped
    )
  }
  // Registered after the writer fiber, so it runs first at shutdown: pending settlements are written.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* writer.flush
      closed = true
      yield* writer.flush
    }).pipe(
      Effect.timeoutOption(Duration.millis(options.flushTimeoutMillis)),
      Effect.flatMap((done) =>
        Option.isNone(done) ? Effect.logError("shutdown: pending settlements were not all written in time") : Effect.void
      )
    )
  )
  const figures = Effect.fnUntraced(function*(p: Principal): Effect.fn.Return<EligibilityFigures, StoreError> {
    const key = Option.getOrElse(
      yield* Cache.get(keys, p.key.id),
      () => ({ status: p.key.status, quotaUsedMicros: p.key.quotaUsedMicros })
    )
    const subscription: SubscriptionFigures | undefined = p.group.billing === "subscription"
      ? Option.getOrUndefined(yield* Cache.get(subscriptions, subKey(p.user.name, p.group.name)))
      : undefined
    return inFlight.apply(p, {
      keyStatus: key.status,
      quotaUsedMicros: key.quotaUsedMicros,
      balanceMicros: p.group.billing === "balance" ? yield* Cache.get(balances, p.user.name) : 0,
      subscription
    })
  })
  const settle = (s: Settlement): Effect.Effect<Charged, StoreError> =>
    Effect.suspend(() => {
      if (closed) {
        return Effect.fail(new StoreError({ message: "the store has shut down; the settlement was not recorded" }))
      }
      const entry = tracked.get(s.requestId)
      tracked.delete(s.requestId)
      hashOfKey.set(s.principal.key.id, s.principal.key.sha256)
      const { cost, priceFallback } = charge(s.model, s.usage, s.principal.group.rateMultiplier, prices, packagePrices, data.toolPrices)
      // The caller waits for the batch's commit; a plain callback, not a Deferred, per settlement.
      return Effect.callback<Charged, StoreError>((resume) => {
        const item: SettleItem = {
          _tag: "Settle",
          settlement: s,
          cost,
          priceFallback,
          closesMarker: entry?.written === true,
          done: resume
        }
        inFlight.add(item, s.principal, cost, s.at.getTime())
        writer.enqueue(item)
      })
    })
  const track = (requestId: string, p: Principal, model: string) =>
    Effect.suspend(() => {
      if (closed) return Effect.void
      tracked.set(requestId, { marker: { requestId, keyId: p.key.id, model, at: now() }, written: false })
      markersPending.openUnsafe()
      return Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope,
        Effect.sync(() => {
          // Still here: the request ended without a settlement (an error, a refusal), nothing is owed.
          const entry = tracked.get(requestId)
          tracked.delete(requestId)
          if (entry?.written === true && !closed) writer.enqueue({ _tag: "Close", requestId })
        })))
    })
  return {
    findPrincipal: (sha256) => Cache.get(principals, sha256),
    figures,
    costOf: (model, usage, rateMultiplier) => charge(model, usage, rateMultiplier, prices, packagePrices, data.toolPrices).cost,
    settle,
    track,
    // A report reads what is committed: settlements still in flight (this key's, or another key's
    // of the same user, which moved the balance) are written first.
    snapshot: (p, range, now) =>
      Effect.andThen(
        Effect.suspend(() => (inFlight.size > 0 ? writer.flush : Effect.void)),
        withSql(loadSnapshot(p, range, now)).pipe(orStoreError("reading usage failed"))
      ),
    flush: writer.flush,
    forgetCached: Effect.all([
      Cache.invalidateAll(principals),
      Cache.invalidateAll(keys),
      Cache.invalidateAll(balances),
      Cache.invalidateAll(subscriptions)
    ], { discard: true }).pipe(
      Effect.andThen(withSql(Effect.all([priceOverrides, loadOperatorAccounts]))),
      Effect.map(([loadedPrices, added]) => {
        prices = loadedPrices
        accounts = withOperators(added)
      }),
      Effect.catchCause((cause) => Effect.logWarning("could not reload prices and accounts; the ones loaded before stay", cause))
    ),
    accounts: () => accounts
  } satisfies StoreShape
})

/** Environment overrides: STORE_CACHE_TTL_MS, STORE_MAX_BATCH. */
const optionsFromEnv = Config.all({
  cacheTtlMillis: Config.Int("STORE_CACHE_TTL_MS").pipe(Config.withDefault(defaultStoreOptions.cacheTtlMillis)),
  maxBatch: Config.Int("STORE_MAX_BATCH").pipe(Config.withDefault(defaultStoreOptions.maxBatch))
}).pipe(Effect.map((env): StoreOptions => ({ ...defaultStoreOptions, ...env })))

export class Store extends Context.Service<Store, StoreShape>()("modelgate/Store") {
  /** Over the provided SqlClient (already migrated), options from the environment. */
  static readonly layer = Layer.effect(
    Store,
    Effect.flatMap(
      optionsFromEnv.pipe(Effect.mapError((cause) => new StoreError({ message: "invalid store settings", cause }))),
      make
    )
  )
  static readonly layerWith = (options: Partial<StoreOptions>) =>
    Layer.effect(Store, make({ ...defaultStoreOptions, ...options }))
  /**
   * Over a fresh in-memory SQLite database (migrated, empty: rows come from the test, or from
   * Database.configSyncLayer), with its SqlClient. The AppConfig comes from the caller.
   */
  static readonly layerTest = (options: Partial<StoreOptions> = {}) =>
    Store.layerWith({ reportOrphans: false, ...options }).pipe(
      Layer.provideMerge(
        Layer.tap(sqlClientLayer(sqliteTarget(":memory:")), (ctx) => Effect.provide(migrate(), ctx))
      )
    )
}
