/**
 * The Scheduler's behaviour, written once and run against every implementation (in process always,
 * Redis when reachable): selection order, sticky sessions, cooldowns, take-outs, key and account
 * slots with their queues, and slots given back whichever way a scope ends. Each test gets a fresh
 * scheduler (for Redis: a fresh key prefix). Real time throughout (Redis has its own clock).
 */
import { Effect, Exit, Fiber, type Layer, Scope } from "effect"
import { describe, expect, it } from "vitest"
import type { GatewayData } from "../../src/config/resolve.js"
import type { NoAvailableAccount, RateLimited } from "../../src/domain/errors.js"
import type { Account } from "../../src/domain/model.js"
import {
  type AccountTicket,
  type PickRequest,
  Scheduler,
  type SchedulerTestOptions,
  type SlotTicket,
  type UpstreamOutcome
} from "../../src/services/scheduler/Scheduler.js"
import { principalOf, suiteData, suiteOptions } from "./suiteData.js"

export { principalOf, suiteData, suiteOptions } from "./suiteData.js"

export type MakeScheduler = (data: GatewayData, options: SchedulerTestOptions) => Layer.Layer<Scheduler, unknown>

const accountOf = (data: GatewayData, name: string): Account => {
  const a = data.accounts.find((x) => x.name === name)
  if (!a) throw new Error(`no account ${name}`)
  return a
}

/** Effect.flip puts a success in the error channel: the suite's programs may fail with anything. */
type Program<A> = Effect.Effect<A, unknown, Scheduler | Scope.Scope>

/** Runs a program on a fresh scheduler; everything it holds is released at the end. */
export const runWith = <A>(make: MakeScheduler, program: Program<A>, options: SchedulerTestOptions = suiteOptions) =>
  Effect.runPromise(Effect.scoped(Effect.provide(program, make(suiteData, options))))

/** Something held in its own scope: close it to give it back. */
interface Held<A> {
  readonly value: A
  readonly release: Effect.Effect<void>
}

const holding = <A, E, R>(effect: Effect.Effect<A, E, R | Scope.Scope>): Effect.Effect<Held<A>, E, Exclude<R, Scope.Scope>> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const value = yield* Effect.onError(Scope.provide(effect, scope), (cause) => Scope.close(scope, Exit.failCause(cause)))
    return { value, release: Scope.close(scope, Exit.void) }
  })

const group = (name: string) => {
  const g = suiteData.groups.get(name)
  if (!g) throw new Error(`no group ${name}`)
  return g
}

const request = (overrides: Partial<PickRequest> = {}): PickRequest => ({
  group: group("g"),
  model: "gpt",
  session: undefined,
  exclude: new Set(),
  ...overrides
})

/** Picks an account and holds its slot (the ticket may be queued). */
const pick = (overrides: Partial<PickRequest> = {}) =>
  Effect.flatMap(Scheduler, (s) => holding(s.acquireAccount(request(overrides))))

/** Picks, notes the account, gives the slot back. */
const pickName = (overrides: Partial<PickRequest> = {}) =>
  Effect.flatMap(pick(overrides), (held) => {
    if (held.value._tag !== "Granted") return Effect.die(new Error(`expected a granted slot, got ${held.value._tag}`))
    return Effect.as(held.release, held.value.account.name)
  })

const granted = (held: Held<AccountTicket>): string => {
  expect(held.value._tag).toBe("Granted")
  return held.value.account.name
}

const report = (name: string, outcome: UpstreamOutcome, session?: string) =>
  Effect.flatMap(Scheduler, (s) => s.report(accountOf(suiteData, name), outcome, session))

const failure = (status: number, headers: Record<string, string> = {}): UpstreamOutcome => ({
  _tag: "Failure",
  status,
  headers,
  code: undefined
})

const healthOf = (name: string) =>
  Effect.flatMap(Scheduler, (s) =>
    Effect.map(s.health, (all) => {
      const h = all.find((x) => x.account.name === name)
      if (h === undefined) throw new Error(`no account ${name}`)
      return h
    }))

/** A failure with our code or the upstream's words. */
const refusal = (status: number, fields: { readonly code?: string; readonly detail?: string }): UpstreamOutcome => ({
  _tag: "Failure",
  status,
  headers: {},
  code: fields.code,
  detail: fields.detail
})

const keySlot = (keyName: string) =>
  Effect.flatMap(Scheduler, (s) => holding(s.acquireKeySlot(principalOf(suiteData, keyName))))

const poolStats = (pool: string) =>
  Effect.flatMap(Scheduler, (s) =>
    Effect.map(s.stats, (all) => {
      const p = all.find((x) => x.pool === pool)
      return { inUse: p?.inUse ?? 0, waiting: p?.waiting ?? 0 }
    }))

const waitOf = (ticket: SlotTicket | AccountTicket) => {
  if (ticket._tag !== "Queued") throw new Error("expected a queued ticket")
  return ticket.wait
}

export const schedulerSuite = (make: MakeScheduler) => {
  const run = <A>(program: Program<A>, options?: SchedulerTestOptions) => runWith(make, program, options)

  describe("account selection", () => {
    it("lowest priority number first; an account whose mapping lacks the model is skipped", () =>
      run(Effect.gen(function*() {
        expect(yield* pickName({ model: "special" })).toBe("m")
        expect(yield* pickName({ model: "gpt" })).toBe("a1")
      })))

    it("then lowest load, then least recently used; when all are full the best one queues", () =>
      run(Effect.gen(function*() {
        const first = yield* pick()
        expect(granted(first)).toBe("a1")
        // a1 is half full, a2 empty.
        expect(granted(yield* pick())).toBe("a2")
        // Equal load: a1 was used longer ago.
        expect(granted(yield* pick())).toBe("a1")
        expect(granted(yield* pick())).toBe("a2")
        // Both priority-10 accounts full: the priority-20 one serves.
        expect(granted(yield* pick())).toBe("a3")
        // Everything full: a place in the best account's queue; a release hands it the slot.
        const queued = yield* pick()
        expect(queued.value._tag).toBe("Queued")
        expect(queued.value.account.name).toBe("a1")
        expect((yield* poolStats("account:a1")).waiting).toBe(1)
        // Waiters count as load: the next one queues for a2.
        const queued2 = yield* pick()
        expect([queued2.value._tag, queued2.value.account.name]).toEqual(["Queued", "a2"])
        // Both account queues (limit 1) are full now.
        const refused = yield* Effect.flip(pick())
        expect(refused).toMatchObject({ _tag: "RateLimited", code: "too_many_pending_requests" })
        yield* first.release
        yield* waitOf(queued.value)
        expect(yield* poolStats("account:a1")).toEqual({ inUse: 2, waiting: 0 })
      })))

    it("a ticket's release gives its slot (or queue place) back at once; a second release or the scope's close gives back nothing more", () =>
      run(Effect.gen(function*() {
        const solo = { group: group("solo") }
        const first = yield* pick(solo)
        expect(granted(first)).toBe("s1")
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 1, waiting: 0 })
        yield* first.value.release
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 0, waiting: 0 })
        // The freed slot is taken by the next pick; the first ticket's later release and scope close
        // must not free that one too.
        const second = yield* pick(solo)
        expect(granted(second)).toBe("s1")
        yield* first.value.release
        yield* first.release
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 1, waiting: 0 })
        // A place in the queue goes the same way, and the slot is not handed to a waiter who left.
        const queued = yield* pick(solo)
        expect(queued.value._tag).toBe("Queued")
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 1, waiting: 1 })
        yield* queued.value.release
        yield* queued.value.release
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 1, waiting: 0 })
        yield* second.release
        yield* queued.release
        expect(yield* poolStats("account:s1")).toEqual({ inUse: 0, waiting: 0 })
      })))

    it("least recently used alternates between equal accounts", () =>
      run(Effect.gen(function*() {
        const names: Array<string> = []
        for (let i = 0; i < 4; i++) names.push(yield* pickName())
        expect(names).toEqual(["a1", "a2", "a1", "a2"])
      })))

    it("accounts already tried are excluded; none left is 503 no_available_account", () =>
      run(Effect.gen(function*() {
        expect(yield* pickName({ exclude: new Set(["a1", "a2"]) })).toBe("a3")
        const none = yield* Effect.flip(pick({ exclude: new Set(["a1", "a2", "a3"]) }))
        expect(none).toMatchObject({ _tag: "NoAvailableAccount" })
        expect((none as NoAvailableAccount).retryAfterSeconds).toBeUndefined()
      })))
  })

  describe("cooldowns and take-outs", () => {
    it("a cooling account is skipped; with only cooling accounts left, 503 says when one is back", () =>
      run(Effect.gen(function*() {
        yield* report("a1", failure(429, { "retry-after": "30" }))
        expect(yield* pickName()).toBe("a2")
        yield* report("s1", failure(429, { "retry-after": "60" }))
        const none = yield* Effect.flip(pick({ group: group("solo") }))
        expect(none).toMatchObject({ _tag: "NoAvailableAccount" })
        const retry = (none as NoAvailableAccount).retryAfterSeconds ?? 0
        expect(retry).toBeGreaterThanOrEqual(55)
        expect(retry).toBeLessThanOrEqual(60)
      })))

    it("a 529 sends traffic to the group's other accounts; with none left, the overloaded account is asked anyway", () =>
      run(Effect.gen(function*() {
        yield* report("a1", failure(529))
        for (let i = 0; i < 3; i++) expect(yield* pickName()).not.toBe("a1")
        yield* report("a2", failure(429, { "retry-after": "60" }))
        yield* report("a3", failure(429, { "retry-after": "60" }))
        expect(yield* pickName()).toBe("a1")
        // Never one the request already tried.
        expect(yield* Effect.flip(pick({ exclude: new Set(["a1"]) }))).toMatchObject({ _tag: "NoAvailableAccount" })
        // A group's only account: the next request reaches it while it cools down.
        yield* report("s1", failure(529))
        expect(yield* healthOf("s1")).toMatchObject({ coolingDownReason: "overloaded" })
        expect(yield* pickName({ group: group("solo") })).toBe("s1")
      })))

    it("a 429 burst lifts when its reset says so", () =>
      run(Effect.gen(function*() {
        yield* report("s1", failure(429, { "retry-after": "1" }))
        const none = yield* Effect.flip(pick({ group: group("solo") }))
        expect((none as NoAvailableAccount).retryAfterSeconds).toBe(1)
        yield* Effect.sleep("1100 millis")
        expect(yield* pickName({ group: group("solo") })).toBe("s1")
      })))

    it("a 401 cools the account down; a second, on another request within the window, takes it out, with the upstream's words", () =>
      run(Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const solo = { group: group("solo") }
        yield* report("s1", refusal(401, { detail: "Incorrect API key provided: sk-***abc" }))
        // One refusal: back by itself (the 503 says when), still listed for /v1/models.
        const cooling = yield* Effect.flip(pick(solo))
        expect(cooling).toMatchObject({ _tag: "NoAvailableAccount" })
        expect((cooling as NoAvailableAccount).retryAfterSeconds).toBeGreaterThan(0)
        expect((yield* scheduler.accounts(group("solo"))).map((a) => a.name)).toEqual(["s1"])
        expect(yield* healthOf("s1")).toMatchObject({ takenOut: false, coolingDownReason: "auth_failed" })
        // The second confirms it: out until an operator acts.
        yield* report("s1", refusal(401, { detail: "Incorrect API key provided: sk-***abc" }))
        const none = yield* Effect.flip(pick(solo))
        expect(none).toMatchObject({ _tag: "NoAvailableAccount" })
        expect((none as NoAvailableAccount).retryAfterSeconds).toBeUndefined()
        expect(yield* scheduler.accounts(group("solo"))).toEqual([])
        const out = yield* healthOf("s1")
        expect(out.takenOut).toBe(true)
        expect(out.takeOut).toMatchObject({ reason: "auth_failed", upstreamMessage: "Incorrect API key provided: sk-***abc" })
        expect(out.takeOut?.since).toBeInstanceOf(Date)
        yield* scheduler.reinstate("s1")
        expect((yield* scheduler.accounts(group("solo"))).map((a) => a.name)).toEqual(["s1"])
        expect(yield* pickName(solo)).toBe("s1")
        expect((yield* healthOf("s1")).takeOut).toBeUndefined()
        // Reinstated, the count starts again: one more 401 only cools it down.
        yield* report("s1", failure(401))
        expect((yield* healthOf("s1")).takenOut).toBe(false)
      })))

    it("a success in between forgets the first 401; so does a confirm window that ran out", () =>
      run(Effect.gen(function*() {
        yield* report("s1", failure(401))
        yield* report("s1", { _tag: "Success" })
        yield* report("s1", failure(401))
        expect((yield* healthOf("s1")).takenOut).toBe(false)
        yield* report("s1", { _tag: "Success" })
        yield* report("s1", failure(401))
        // Well past the 0.2 s window.
        yield* Effect.sleep("600 millis")
        yield* report("s1", failure(401))
        expect((yield* healthOf("s1")).takenOut).toBe(false)
        yield* report("s1", failure(401))
        expect((yield* healthOf("s1")).takenOut).toBe(true)
      }), { ...suiteOptions, scheduling: { ...suiteOptions.scheduling, authCooldownSeconds: 0, authConfirmWindowSeconds: 0.2 } }))

    it("a 403 that denies the request counts nothing; one that refuses the credential strikes like a 401", () =>
      run(Effect.gen(function*() {
        const solo = { group: group("solo") }
        for (let i = 0; i < 5; i++) yield* report("s1", refusal(403, { code: "model_not_found" }))
        for (let i = 0; i < 5; i++) yield* report("s1", refusal(403, { code: "upstream_permission_denied" }))
        expect(yield* pickName(solo)).toBe("s1")
        expect(yield* healthOf("s1")).toMatchObject({ takenOut: false, coolingDownUntil: undefined })
        yield* report("s1", refusal(403, { code: "upstream_auth_failed" }))
        expect(yield* healthOf("s1")).toMatchObject({ takenOut: false, coolingDownReason: "auth_failed" })
        yield* report("s1", refusal(403, { code: "upstream_auth_failed" }))
        expect((yield* healthOf("s1")).takeOut?.reason).toBe("auth_failed")
      })))

    it("an operator's take-out shows as such", () =>
      run(Effect.gen(function*() {
        const scheduler = yield* Scheduler
        expect(yield* scheduler.takeOut("s1")).toBe(true)
        expect((yield* healthOf("s1")).takeOut).toMatchObject({ reason: "operator", upstreamMessage: undefined })
      })))

    it("5xx is counted, not punished at once: only repeated failures cool the account down", () =>
      run(Effect.gen(function*() {
        const solo = { group: group("solo") }
        yield* report("s1", failure(500))
        yield* report("s1", failure(502))
        expect(yield* pickName(solo)).toBe("s1")
        yield* report("s1", { _tag: "Success" })
        yield* report("s1", failure(503))
        yield* report("s1", { _tag: "Failure", status: 0, headers: {}, code: "upstream_first_byte_timeout" })
        expect(yield* pickName(solo)).toBe("s1")
        yield* report("s1", failure(500))
        expect(yield* Effect.flip(pick(solo))).toMatchObject({ _tag: "NoAvailableAccount" })
      })))

    it("a request's own 4xx counts nothing against the account", () =>
      run(Effect.gen(function*() {
        for (let i = 0; i < 5; i++) yield* report("s1", failure(400))
        expect(yield* pickName({ group: group("solo") })).toBe("s1")
      })))
  })

  describe("sticky sessions", () => {
    it("a session goes back to its account even when another is less recently used", () =>
      run(Effect.gen(function*() {
        expect(yield* pickName({ session: "S" })).toBe("a1")
        expect(yield* pickName()).toBe("a2")
        expect(yield* pickName()).toBe("a1")
        // Without the session a2 would be next.
        expect(yield* pickName({ session: "S" })).toBe("a1")
        expect(yield* pickName({ session: "other" })).toBe("a2")
      })))

    it("a busy sticky account: another serves, and the binding stays", () =>
      run(Effect.gen(function*() {
        const one = yield* pick({ session: "S" })
        const two = yield* pick({ session: "S" })
        expect([granted(one), granted(two)]).toEqual(["a1", "a1"])
        expect(yield* pickName({ session: "S" })).toBe("a2")
        yield* one.release
        yield* two.release
        expect(yield* pickName({ session: "S" })).toBe("a1")
      })))

    it("dropped when its account cools down, and rebound to the account that served", () =>
      run(Effect.gen(function*() {
        const scheduler = yield* Scheduler
        expect(yield* pickName({ session: "S" })).toBe("a1")
        yield* report("a1", failure(429, { "retry-after": "60" }), "S")
        expect(yield* pickName({ session: "S" })).toBe("a2")
        yield* scheduler.reinstate("a1")
        // a1 is back and less recently used, but the session now lives on a2.
        expect(yield* pickName({ session: "S" })).toBe("a2")
      })))

    it("dropped when its account fails, even without a cooldown", () =>
      run(Effect.gen(function*() {
        expect(yield* pickName({ session: "S" })).toBe("a1")
        yield* report("a1", failure(500), "S")
        expect(yield* pickName({ session: "S" })).toBe("a2")
        expect(yield* pickName()).toBe("a1")
        expect(yield* pickName({ session: "S" })).toBe("a2")
      })))
  })

  describe("key and user slots", () => {
    it("up to the limit at once, then a bounded queue; a full queue and a timed-out wait are 429s", () =>
      run(Effect.gen(function*() {
        const first = yield* keySlot("k-own")
        expect(first.value._tag).toBe("Granted")
        const second = yield* keySlot("k-own")
        expect(second.value._tag).toBe("Queued")
        expect(yield* Effect.flip(keySlot("k-own"))).toMatchObject({
          _tag: "RateLimited",
          code: "too_many_pending_requests"
        })
        const started = Date.now()
        const timedOut = yield* Effect.flip(waitOf(second.value))
        expect(Date.now() - started).toBeGreaterThanOrEqual(350)
        expect(timedOut).toMatchObject({ _tag: "RateLimited", code: "concurrency_limit_exceeded" })
        expect((timedOut as RateLimited).retryAfterSeconds).toBeGreaterThanOrEqual(1)
        expect((yield* poolStats("key:k-own")).waiting).toBe(0)
        // The queue has room again; a release hands the slot to the waiter.
        const third = yield* keySlot("k-own")
        const waiting = yield* Effect.forkChild(waitOf(third.value))
        yield* Effect.sleep("50 millis")
        yield* first.release
        yield* Fiber.join(waiting)
        expect(yield* poolStats("key:k-own")).toEqual({ inUse: 1, waiting: 0 })
        yield* third.release
        expect(yield* poolStats("key:k-own")).toEqual({ inUse: 0, waiting: 0 })
      })))

    it("a key without its own limit shares its user's limit with the user's other keys", () =>
      run(Effect.gen(function*() {
        expect((yield* keySlot("k-user")).value._tag).toBe("Granted")
        expect((yield* keySlot("k-user-2")).value._tag).toBe("Granted")
        expect((yield* keySlot("k-user")).value._tag).toBe("Queued")
        expect(yield* poolStats("user:u")).toEqual({ inUse: 2, waiting: 1 })
      })))

    it("slots and queue places are given back on success, failure and interruption", () =>
      run(Effect.gen(function*() {
        const scheduler = yield* Scheduler
        const principal = principalOf(suiteData, "k-own")
        // Success.
        yield* Effect.scoped(Effect.andThen(scheduler.acquireKeySlot(principal), scheduler.acquireAccount(request())))
        // Failure after taking both.
        const failed = yield* Effect.exit(Effect.scoped(
          scheduler.acquireKeySlot(principal).pipe(
            Effect.andThen(scheduler.acquireAccount(request())),
            Effect.andThen(Effect.fail("upstream went away"))
          )
        ))
        expect(Exit.isFailure(failed)).toBe(true)
        // Interruption while holding, and while waiting in the queue.
        const holder = yield* Effect.forkChild(Effect.scoped(
          Effect.andThen(scheduler.acquireKeySlot(principal), Effect.andThen(scheduler.acquireAccount(request()), Effect.never))
        ))
        yield* Effect.sleep("50 millis")
        const waiter = yield* Effect.forkChild(Effect.scoped(
          Effect.flatMap(scheduler.acquireKeySlot(principal), (t) => (t._tag === "Queued" ? t.wait : Effect.void))
        ))
        yield* Effect.sleep("50 millis")
        expect(yield* poolStats("key:k-own")).toEqual({ inUse: 1, waiting: 1 })
        expect((yield* poolStats("account:a1")).inUse + (yield* poolStats("account:a2")).inUse).toBe(1)
        yield* Fiber.interrupt(waiter)
        yield* Fiber.interrupt(holder)
        expect(yield* poolStats("key:k-own")).toEqual({ inUse: 0, waiting: 0 })
        expect(yield* poolStats("account:a1")).toEqual({ inUse: 0, waiting: 0 })
        expect(yield* poolStats("account:a2")).toEqual({ inUse: 0, waiting: 0 })
      })))
  })
}
