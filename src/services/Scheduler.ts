/**
 * Scheduler: which upstream account serves a request, and the concurrency slots that guard keys and
 * accounts. This is the in-process implementation (one gateway instance).
 */
import { Context, Duration, Effect, Layer, type Scope } from "effect"
import { AppConfig, Settings } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import { NoAvailableAccount, RateLimited } from "../domain/errors.js"
import { type Account, accountServes, type Group, type Principal } from "../domain/model.js"
import { SlotPools, type SlotRefusal } from "./slots.js"

export interface PickRequest {
  readonly group: Group
  readonly model: string
  /** Accounts already tried for this request (failover). */
  readonly exclude: ReadonlySet<string>
}

export type UpstreamOutcome =
  | { readonly _tag: "Success" }
  | { readonly _tag: "Failure"; readonly status: number; readonly retryAfterSeconds: number | undefined }

export interface SchedulerShape {
  /** The group's accounts on its platform that are not switched off (for /v1/models). */
  readonly accounts: (group: Group) => Effect.Effect<ReadonlyArray<Account>>
  /** Holds one of the key's concurrency slots for the current scope, waiting in a bounded queue. */
  readonly acquireKeySlot: (principal: Principal) => Effect.Effect<void, RateLimited, Scope.Scope>
  /** Picks an account and holds one of its slots for the current scope. */
  readonly acquireAccount: (req: PickRequest) => Effect.Effect<Account, NoAvailableAccount | RateLimited, Scope.Scope>
  /** What the upstream did, so a failing account cools down. */
  readonly report: (account: Account, outcome: UpstreamOutcome) => Effect.Effect<void>
}

export interface SchedulerOptions {
  readonly slotWaitMillis: number
  readonly slotQueueLimit: number
}

const refusal = (who: string, waitMillis: number) => (r: SlotRefusal): RateLimited =>
  r._tag === "QueueFull"
    ? new RateLimited({ code: "too_many_pending_requests", message: "Too many pending requests, please retry later" })
    : new RateLimited({
      code: "concurrency_limit_exceeded",
      message: `Concurrency limit exceeded for ${who}, please retry later`,
      retryAfterSeconds: Math.max(1, Math.ceil(waitMillis / 1000 / 10))
    })

export const makeInProcess = (data: GatewayData, options: SchedulerOptions): SchedulerShape => {
  const slots = new SlotPools()
  const cooldownUntil = new Map<string, number>()
  const lastUsed = new Map<string, number>()
  let tick = 0

  const usable = (a: Account, now: number) => (cooldownUntil.get(a.name) ?? 0) <= now
  const groupAccounts = (group: Group) =>
    data.accounts.filter((a) => a.platform === group.platform && a.groups.includes(group.name))
  const load = (a: Account) => slots.stats(`account:${a.name}`).inUse / a.concurrency

  return {
    accounts: (group) => Effect.sync(() => groupAccounts(group).filter((a) => usable(a, Date.now()))),

    acquireKeySlot: (p) => {
      // A key's own limit wins; otherwise the user's limit applies across all of the user's keys.
      const [id, limit] = p.key.concurrency !== undefined
        ? [`key:${p.key.id}`, p.key.concurrency]
        : [`user:${p.user.name}`, p.user.concurrency]
      return slots.acquire(id, limit, {
        queueLimit: options.slotQueueLimit,
        wait: Duration.millis(options.slotWaitMillis)
      }).pipe(Effect.mapError(refusal("this API key", options.slotWaitMillis)))
    },

    acquireAccount: (req) =>
      Effect.suspend((): Effect.Effect<Account, NoAvailableAccount | RateLimited, Scope.Scope> => {
        const now = Date.now()
        const candidates = groupAccounts(req.group)
          .filter((a) => !req.exclude.has(a.name) && usable(a, now) && accountServes(a, req.model))
          .sort((a, b) =>
            a.priority - b.priority || load(a) - load(b) || (lastUsed.get(a.name) ?? 0) - (lastUsed.get(b.name) ?? 0)
          )
        const first = candidates[0]
        if (!first) {
          // When accounts are only cooling down, say when the first one is back.
          const backAt = groupAccounts(req.group)
            .filter((a) => !req.exclude.has(a.name) && accountServes(a, req.model) && !usable(a, now))
            .map((a) => cooldownUntil.get(a.name) ?? now)
          const retryAfterSeconds = backAt.length > 0 ? Math.max(1, Math.ceil((Math.min(...backAt) - now) / 1000)) : undefined
          return Effect.fail(
            new NoAvailableAccount({
              message: `No available account for model '${req.model}' in this group`,
              ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds })
            })
          )
        }
        const take = (a: Account) => {
          lastUsed.set(a.name, ++tick)
          return a
        }
        const free = candidates.find((a) => slots.hasFree(`account:${a.name}`, a.concurrency))
        const target = free ?? first
        return slots.acquire(`account:${target.name}`, target.concurrency, {
          queueLimit: free ? Number.MAX_SAFE_INTEGER : options.slotQueueLimit * 5,
          wait: Duration.millis(options.slotWaitMillis)
        }).pipe(Effect.mapError(refusal("upstream account", options.slotWaitMillis)), Effect.as(take(target)))
      }),

    report: (account, outcome) =>
      Effect.sync(() => {
        if (outcome._tag === "Success") return
        const now = Date.now()
        // Short, evidence-based cooldowns; the scheduling issue refines these.
        if (outcome.status === 429) cooldownUntil.set(account.name, now + 1000 * (outcome.retryAfterSeconds ?? 30))
        else if (outcome.status === 529) cooldownUntil.set(account.name, now + 60_000)
        else if (outcome.status === 401 || outcome.status === 403) cooldownUntil.set(account.name, now + 10 * 60_000)
      })
  }
}

export class Scheduler extends Context.Tag("modelgate/Scheduler")<Scheduler, SchedulerShape>() {
  static readonly layer = Layer.effect(
    Scheduler,
    Effect.gen(function*() {
      const { data } = yield* AppConfig
      const settings = yield* Settings
      return makeInProcess(data, settings)
    })
  )
  static readonly layerTest = (data: GatewayData, options: Partial<SchedulerOptions> = {}) =>
    Layer.sync(Scheduler, () => makeInProcess(data, { slotWaitMillis: 1000, slotQueueLimit: 20, ...options }))
}
