/**
 * The scheduling algorithm, once, over a SchedulerStore: the in-process and the Redis scheduler are
 * this function applied to their store. Selection is select.ts, cooldown rules are verdict.ts; this
 * file wires them to the store and turns refusals into the catalogue's errors.
 */
import { createHash } from "node:crypto"
import { Clock, Effect, Redacted, type Scope } from "effect"
import type { GatewayData } from "../../config/resolve.js"
import { NoAvailableAccount, RateLimited, type StoreError } from "../../domain/errors.js"
import { type Account, accountServes, type Group, type Principal } from "../../domain/model.js"
import {
  type AccountHealth,
  type AccountTicket,
  defaultFailover,
  noAccountsConfigured,
  type SchedulerOptions,
  type SchedulerShape,
  type SlotTicket,
  type UpstreamOutcome
} from "./Scheduler.js"
import { countCooldown } from "../../observability/schedulerMetrics.js"
import { select } from "./select.js"
import { accountPool, type Entry, type OnGrant, type SchedulerStore } from "./store.js"
import { type Verdict, verdictFor } from "./verdict.js"



const tooManyPending = (who: string) =>
  new RateLimited({ code: "too_many_pending_requests", message: `Too many pending requests for ${who}, please retry later` })

const waitedTooLong = (who: string, waitMillis: number) =>
  new RateLimited({
    code: "concurrency_limit_exceeded",
    message: `Concurrency limit exceeded for ${who}, please retry later`,
    retryAfterSeconds: Math.max(1, Math.ceil(waitMillis / 1000 / 10))
  })

const noAccount = (model: string, backInMillis: number | undefined) =>
  new NoAvailableAccount({
    message: `No available account for model '${model}' in this group`,
    ...(backInMillis === undefined ? {} : { retryAfterSeconds: Math.max(1, Math.ceil(backInMillis / 1000)) })
  })

/**
 * What identifies an account's credentials: a take-out for an auth failure is recorded against it,
 * so an operator who rotates the key (or moves the base URL) brings the account back without
 * clearing anything. Only a short hash: never the secret itself.
 */
const fingerprint = (a: Account): string =>
  createHash("sha256")
    .update(`${a.kind}\u0000${a.baseUrl}\u0000${a.secret === undefined ? "" : Redacted.value(a.secret)}`)
    .digest("hex")
    .slice(0, 16)

const GRANTED_SLOT: SlotTicket = { _tag: "Granted" }

/** How much of the upstream's words a take-out keeps (they are for a log line and an admin listing). */
const DETAIL_LIMIT = 500

/**
 * `accounts` gives the accounts to pick from now (default: the config file's). The per-group lists
 * are kept while it keeps returning the same array, and computed again from any other (a store
 * that builds a new array each time costs a filter per pick; nothing is ever stale).
 */
export const makeScheduler = (
  data: GatewayData,
  options: SchedulerOptions,
  store: SchedulerStore,
  accounts: () => ReadonlyArray<Account> = () => data.accounts
): SchedulerShape => {
  const policy = options.scheduling
  // Whole milliseconds: Redis takes the TTL as an integer.
  const stickyTtlMillis = Math.max(1, Math.round(policy.stickyTtlSeconds * 1000))
  const byGroup = new Map<string, ReadonlyArray<Account>>()
  const fingerprints = new WeakMap<Account, string>()
  let seen: ReadonlyArray<Account> | undefined

  /** The accounts now, with the per-group lists dropped when they changed. */
  const all = (): ReadonlyArray<Account> => {
    const now = accounts()
    if (now !== seen) {
      seen = now
      byGroup.clear()
    }
    return now
  }

  const groupAccounts = (group: Group): ReadonlyArray<Account> => {
    const list = all()
    const id = `${group.platform}\u0000${group.name}`
    let found = byGroup.get(id)
    if (!found) {
      found = list.filter((a) => a.platform === group.platform && a.groups.includes(group.name))
      byGroup.set(id, found)
    }
    return found
  }

  const fingerprintOf = (a: Account): string => {
    let fp = fingerprints.get(a)
    if (fp === undefined) fingerprints.set(a, fp = fingerprint(a))
    return fp
  }

  /** A failure to record state must not fail the request it is about: log it and go on. */
  const bestEffort = (what: string) => (e: StoreError) =>
    Effect.logWarning(`scheduler could not record ${what}`).pipe(Effect.annotateLogs({ error: e.message }))

  const slotTicket = (who: string) => (entry: Entry): Effect.Effect<SlotTicket, RateLimited> => {
    if (entry._tag === "Granted") return Effect.succeed(GRANTED_SLOT)
    if (entry._tag === "Full") return Effect.fail(tooManyPending(who))
    const wait = Effect.flatMap(
      entry.wait(options.slotWaitMillis),
      (held) => (held ? Effect.void : Effect.fail(waitedTooLong(who, options.slotWaitMillis)))
    )
    return Effect.succeed({ _tag: "Queued", wait })
  }

  // The refusal names the limit that was hit: the key's own, or the user's across their keys.
  const keySlot = slotTicket("this API key")
  const userSlot = slotTicket("this user's keys together")
  const accountSlot = slotTicket("the upstream accounts")

  const report: SchedulerShape["report"] = (account, outcome, session) => {
    if (outcome._tag === "Success") return Effect.catch(store.clearFailures(account.name), bestEffort("a success"))
    return Effect.flatMap(Clock.currentTimeMillis, (now) => reportFailure(account, outcome, verdictFor(outcome, policy, now), session))
  }

  const reportFailure = (
    account: Account,
    outcome: Extract<UpstreamOutcome, { _tag: "Failure" }>,
    verdict: Verdict,
    session: string | undefined
  ): Effect.Effect<void> => {
    const log = { account: account.name, status: outcome.status }
    // The upstream's words go with a take-out (and its log line): the operator's first clue.
    const detail = outcome.detail === undefined ? undefined : outcome.detail.slice(0, DETAIL_LIMIT)
    const said = detail === undefined ? {} : { upstream_message: detail }
    let record: Effect.Effect<void, StoreError>
    switch (verdict._tag) {
      case "Ignore":
        return Effect.void
      case "CoolDown":
        record = store.coolDown(account.name, verdict.millis, verdict.reason).pipe(
          Effect.andThen(countCooldown(account.name, verdict.reason)),
          Effect.andThen(Effect.logWarning("upstream account cooling down").pipe(
            Effect.annotateLogs({ ...log, reason: verdict.reason, seconds: Math.ceil(verdict.millis / 1000) })
          ))
        )
        break
      case "Strike": {
        const { millis, windowMillis, reason } = verdict
        record = Effect.flatMap(
          store.strike(account.name, { fingerprint: fingerprintOf(account), windowMillis, cooldownMillis: millis, reason, detail }),
          (takenOut) =>
            countCooldown(account.name, reason).pipe(Effect.andThen(
              takenOut
                ? Effect.logError("upstream account taken out until an operator acts (new credentials or reinstate): its credentials were refused again").pipe(
                  Effect.annotateLogs({ ...log, reason, ...said })
                )
                : Effect.logWarning("upstream account cooling down: its credentials were refused; another refusal soon takes it out").pipe(
                  Effect.annotateLogs({
                    ...log,
                    reason,
                    ...said,
                    seconds: Math.ceil(millis / 1000),
                    confirm_window_seconds: Math.ceil(windowMillis / 1000)
                  })
                )
            ))
        )
        break
      }
      case "TakeOut":
        record = store.disable(account.name, fingerprintOf(account), verdict.reason, detail).pipe(
          Effect.andThen(countCooldown(account.name, verdict.reason)),
          Effect.andThen(Effect.logError("upstream account taken out until an operator acts (new credentials or reinstate)").pipe(
            Effect.annotateLogs({ ...log, reason: verdict.reason, ...said })
          ))
        )
        break
      case "Count":
        record = Effect.flatMap(
          store.countFailure(account.name, {
            windowMillis: policy.serverErrorWindowSeconds * 1000,
            threshold: policy.serverErrorThreshold,
            cooldownMillis: policy.serverErrorSeconds * 1000,
            reason: verdict.reason
          }),
          (cooled) =>
            cooled
              ? countCooldown(account.name, verdict.reason).pipe(
                Effect.andThen(Effect.logWarning("upstream account cooling down after repeated failures").pipe(
                  Effect.annotateLogs({ ...log, reason: verdict.reason, seconds: policy.serverErrorSeconds })
                ))
              )
              : Effect.void
        )
        break
    }
    // A session is not left pinned to an account that just failed it: the next pick rebinds.
    const unbind = session === undefined ? Effect.void : store.unbind(session, account.name)
    return record.pipe(Effect.andThen(unbind), Effect.catch(bestEffort("an upstream failure")))
  }

  return {
    accounts: (group) => {
      const all = groupAccounts(group)
      if (all.length === 0) return Effect.succeed(all)
      return store.view(all.map((a) => a.name), undefined).pipe(
        Effect.map((view) => all.filter((a, i) => view.accounts[i]?.disabled !== fingerprintOf(a))),
        // Listing models does not need the shared store: when it is away, list what is configured.
        Effect.catch((e) => Effect.as(bestEffort("nothing; listing configured accounts")(e), all))
      )
    },

    acquireKeySlot: (p: Principal) => {
      // A key's own limit wins; otherwise the user's limit applies across all of the user's keys.
      const [pool, limit] = p.key.concurrency !== undefined
        ? [`key:${p.key.id}`, p.key.concurrency]
        : [`user:${p.user.name}`, p.user.concurrency]
      return Effect.flatMap(store.enter(pool, limit, options.slotQueueLimit, undefined), p.key.concurrency !== undefined ? keySlot : userSlot)
    },

    // Plain flatMaps, not a generator: this runs on every request, and with the in-process store
    // every step is synchronous, so the Effect plumbing is most of its cost.
    acquireAccount: (req) => {
      const inGroup = groupAccounts(req.group)
      if (inGroup.length === 0) return Effect.fail(noAccountsConfigured())
      const candidates = inGroup.filter((a) => !req.exclude.has(a.name) && accountServes(a, req.model))
      if (candidates.length === 0) return Effect.fail(noAccount(req.model, undefined))
      type Picked = Effect.Effect<AccountTicket, NoAvailableAccount | RateLimited | StoreError, Scope.Scope>
      return Effect.flatMap(store.view(candidates.map((a) => a.name), req.session), (view): Picked => {
        const selection = select(candidates, view, fingerprintOf)
        const ordered = selection.ordered
        const best = ordered[0]
        if (best === undefined) return Effect.fail(noAccount(req.model, selection.backInMillis))
        const session = req.session
        const onGrant = (a: Account): OnGrant => ({
          account: a.name,
          // Bind when the session has no usable binding, refresh when this is its account; a sticky
          // account that is only busy keeps its session (the cache is there) while another serves.
          bind: session !== undefined && (selection.sticky === undefined || selection.sticky === a.name)
            ? { session, ttlMillis: stickyTtlMillis }
            : undefined
        })
        // Every account is busy: queue for the best one.
        const queueForBest = Effect.flatMap(
          store.enter(accountPool(best.account.name), best.account.concurrency, policy.accountQueueLimit, onGrant(best.account)),
          (entry): Effect.Effect<AccountTicket, RateLimited> => {
            if (entry._tag === "Full") return Effect.fail(tooManyPending("the upstream accounts"))
            return Effect.map(accountSlot(entry), (ticket): AccountTicket =>
              ticket._tag === "Granted"
                ? { _tag: "Granted", account: best.account, release: entry.release }
                : { _tag: "Queued", account: best.account, wait: ticket.wait, release: entry.release })
          }
        )
        // The free accounts in order; one that filled up since the view was read is skipped.
        const tryFrom = (i: number): Effect.Effect<AccountTicket, RateLimited | StoreError, Scope.Scope> => {
          let c = ordered[i]
          while (c !== undefined && c.view.inUse >= c.account.concurrency) c = ordered[++i]
          if (c === undefined) return queueForBest
          const { account } = c
          return Effect.flatMap(
            store.enter(accountPool(account.name), account.concurrency, -1, onGrant(account)),
            (entry) => (entry._tag === "Granted" ? Effect.succeed({ _tag: "Granted", account, release: entry.release }) : tryFrom(i + 1))
          )
        }
        return tryFrom(0)
      })
    },

    failover: (failure, attempts) => Effect.succeed(defaultFailover(failure, attempts, policy.maxSwitches)),

    report,

    reinstate: store.reinstate,

    takeOut: (name) => {
      const account = all().find((a) => a.name === name)
      return account === undefined
        ? Effect.succeed(false)
        : Effect.as(store.disable(name, fingerprintOf(account), "operator", undefined), true)
    },

    // Every configured account is listed, idle or not, so its gauges exist from the first scrape.
    stats: Effect.suspend(() => store.stats(all().map((a) => accountPool(a.name)))),

    health: Effect.suspend(() => {
      const list = all()
      const names = list.map((a) => a.name)
      return Effect.map(Effect.all([store.view(names, undefined), store.notes(names)]), ([view, notes]) =>
        list.map((account, i): AccountHealth => {
          const v = view.accounts[i]
          const n = notes[i]
          const cooling = v !== undefined && v.coolUntil > view.now
          const takenOut = v !== undefined && v.disabled === fingerprintOf(account)
          return {
            account,
            inUse: v?.inUse ?? 0,
            waiting: v?.waiting ?? 0,
            coolingDownUntil: cooling ? new Date(v.coolUntil) : undefined,
            takenOut,
            coolingDownReason: cooling ? n?.coolReason : undefined,
            takeOut: takenOut
              ? {
                reason: n?.disabledReason ?? "unknown",
                since: n === undefined || n.disabledAt === 0 ? undefined : new Date(n.disabledAt),
                upstreamMessage: n?.disabledDetail
              }
              : undefined
          }
        }))
    })
  }
}
