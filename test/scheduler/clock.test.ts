/**
 * The in-process scheduler reads time from the Clock: under TestClock a cooldown ends, a failure
 * window closes and a sticky binding expires when the test clock says so, with no real waiting.
 * Also the contracts' own test layers (Scheduler, Quota, RateLimits): deterministic defaults.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import type { NoAvailableAccount } from "../../src/domain/errors.js"
import { Lifecycle } from "../../src/services/lifecycle/Lifecycle.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { RateLimits, unlimited } from "../../src/services/rateLimits/RateLimits.js"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"
import { type PickRequest, Scheduler, type UpstreamOutcome } from "../../src/services/scheduler/Scheduler.js"
import { UpstreamAccounts } from "../../src/services/scheduler/UpstreamAccounts.js"
import { principalOf, suiteData, suiteOptions } from "./suiteData.js"

const group = (name: string) => {
  const g = suiteData.groups.get(name)
  if (!g) throw new Error(`no group ${name}`)
  return g
}
const account = (name: string) => {
  const a = suiteData.accounts.find((x) => x.name === name)
  if (!a) throw new Error(`no account ${name}`)
  return a
}
const solo: PickRequest = { group: group("solo"), model: "gpt", session: undefined, exclude: new Set() }
const failure = (status: number, headers: Record<string, string> = {}): UpstreamOutcome => ({
  _tag: "Failure",
  status,
  headers,
  code: undefined
})
const pickName = (req: PickRequest = solo) =>
  Effect.scoped(Effect.flatMap(Scheduler, (s) => Effect.map(s.acquireAccount(req), (t) => t.account.name)))

const onTestClock = SchedulerInProcess.layerTest(suiteData, suiteOptions)

describe("in-process scheduler on the test clock", () => {
  it.effect("a 429 cooldown ends when the test clock passes its reset", () =>
    Effect.gen(function*() {
      const scheduler = yield* Scheduler
      yield* scheduler.report(account("s1"), failure(429, { "retry-after": "30" }))
      const none = yield* Effect.flip(pickName())
      expect((none as NoAvailableAccount).retryAfterSeconds).toBe(30)
      yield* TestClock.adjust("29 seconds")
      expect(yield* Effect.flip(pickName())).toMatchObject({ _tag: "NoAvailableAccount" })
      yield* TestClock.adjust("1 second")
      expect(yield* pickName()).toBe("s1")
    }).pipe(Effect.provide(onTestClock)))

  it.effect("server errors are counted within their window only", () =>
    Effect.gen(function*() {
      const scheduler = yield* Scheduler
      // Threshold 3 within 60 s: two, a window later two more, and the account still serves.
      yield* scheduler.report(account("s1"), failure(500))
      yield* scheduler.report(account("s1"), failure(500))
      yield* TestClock.adjust("61 seconds")
      yield* scheduler.report(account("s1"), failure(500))
      yield* scheduler.report(account("s1"), failure(500))
      expect(yield* pickName()).toBe("s1")
      // The third within the window cools it down for serverErrorSeconds (60).
      yield* scheduler.report(account("s1"), failure(500))
      expect(yield* Effect.flip(pickName())).toMatchObject({ _tag: "NoAvailableAccount" })
      yield* TestClock.adjust("60 seconds")
      expect(yield* pickName()).toBe("s1")
    }).pipe(Effect.provide(onTestClock)))

  it.effect("a sticky binding expires with the test clock (stickyTtlSeconds)", () =>
    Effect.gen(function*() {
      const req: PickRequest = { group: group("g"), model: "gpt", session: "S", exclude: new Set(["m"]) }
      const first = yield* pickName(req)
      // Bound: the same account again, while the other of equal priority would be next by LRU.
      yield* TestClock.adjust("59 seconds")
      expect(yield* pickName(req)).toBe(first)
      // Refreshed on that use; a minute of silence after it and the binding is gone: the pick is
      // by least recent use again, which is now the other account.
      yield* TestClock.adjust("61 seconds")
      const other = yield* pickName(req)
      expect(other).not.toBe(first)
      // And the session is bound to it from then on.
      expect(yield* pickName(req)).toBe(other)
    }).pipe(Effect.provide(onTestClock)))
})

describe("the contracts' test layers", () => {
  it.effect("Scheduler.layerTest: the first account serving the model, every slot granted, failover by the default policy", () =>
    Effect.gen(function*() {
      const scheduler = yield* Scheduler
      const req: PickRequest = { group: group("g"), model: "gpt", session: undefined, exclude: new Set() }
      expect(yield* pickName(req)).toBe("a1")
      expect(yield* pickName({ ...req, exclude: new Set(["a1"]) })).toBe("a2")
      expect(yield* pickName({ ...req, model: "special" })).toBe("a1")
      const slot = yield* Effect.scoped(scheduler.acquireKeySlot(principalOf(suiteData, "k-own")))
      expect(slot._tag).toBe("Granted")
      expect(yield* scheduler.failover({ status: 502, code: undefined }, 1)).toEqual({ _tag: "Switch", reason: "server_error" })
      expect(yield* scheduler.failover({ status: 502, code: undefined }, 3)).toEqual({ _tag: "Stop", reason: "server_error" })
      expect(yield* scheduler.failover({ status: 400, code: undefined }, 1)).toEqual({ _tag: "Stop", reason: undefined })
    }).pipe(Effect.provide(Scheduler.layerTest(suiteData.accounts))))

  it.effect("the in-process scheduler applies the same failover policy with its maxSwitches", () =>
    Effect.gen(function*() {
      const scheduler = yield* Scheduler
      expect(yield* scheduler.failover({ status: 0, code: "upstream_first_byte_timeout" }, 1)).toEqual({
        _tag: "Switch",
        reason: "first_byte_timeout"
      })
      expect(yield* scheduler.failover({ status: 429, code: undefined }, 2)).toEqual({ _tag: "Stop", reason: "rate_limited" })
    }).pipe(Effect.provide(SchedulerInProcess.layerTest(suiteData, { ...suiteOptions, scheduling: { maxSwitches: 1 } }))))

  it.effect("Quota.layerTest: everyone eligible, nothing charged, each request id counted once", () =>
    Effect.gen(function*() {
      const quota = yield* Quota
      const principal = principalOf(suiteData, "k-own")
      expect(yield* quota.check(principal, "gpt")).toBeUndefined()
      const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0, reasoningTokens: 0 }
      const at = new Date("2026-11-27T12:00:00Z")
      expect(yield* quota.settle({ requestId: "r1", principal, model: "gpt", usage, at })).toEqual({ cost: 0, priceFallback: false })
      yield* quota.settle({ requestId: "r1", principal, model: "gpt", usage, at })
      const snapshot = yield* quota.snapshot(principal, { from: "2026-11-01", to: "2026-11-30" }, at)
      expect(snapshot.today).toMatchObject({ requests: 1, inputTokens: 10, outputTokens: 5, costMicros: 0 })
      expect(snapshot.byModel).toEqual([{ model: "gpt", totals: snapshot.today }])
    }).pipe(Effect.provide(Quota.layerTest())))

  it.effect("RateLimits.layerTest: nothing limited by default", () =>
    Effect.gen(function*() {
      const limits = yield* RateLimits
      const admission = yield* limits.admit(principalOf(suiteData, "k-own"), () => 1)
      expect(admission.headers).toEqual(unlimited.headers)
    }).pipe(Effect.provide(RateLimits.layerTest())))
})

/** The accounts UpstreamAccounts.layerTest hands the scheduler; the test changes them. */
let live = suiteData.accounts

describe("the Lifecycle and UpstreamAccounts test layers", () => {
  it.effect("Lifecycle.layerTest: the drain deadline comes when the test clock passes the drain time", () =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      expect(lifecycle.shuttingDown()).toBe(false)
      yield* lifecycle.beginShutdown(30)
      expect(lifecycle.shuttingDown()).toBe(true)
      yield* TestClock.adjust("29 seconds")
      expect(lifecycle.pastDrainDeadline()).toBe(false)
      yield* TestClock.adjust("1 second")
      yield* lifecycle.drainDeadline
      expect(lifecycle.pastDrainDeadline()).toBe(true)
    }).pipe(Effect.provide(Lifecycle.layerTest())))

  it.effect("the in-process scheduler picks from UpstreamAccounts as they change", () =>
    Effect.gen(function*() {
      const req: PickRequest = { group: group("solo"), model: "gpt", session: undefined, exclude: new Set() }
      expect(yield* pickName(req)).toBe("s1")
      live = [...suiteData.accounts.filter((a) => a.name !== "s1"), { ...account("s1"), name: "s2" }]
      expect(yield* pickName(req)).toBe("s2")
    }).pipe(
      Effect.provide(SchedulerInProcess.layer.pipe(
        Layer.provide(UpstreamAccounts.layerTest(() => live)),
        Layer.provide(AppConfig.layer(suiteData, "test")),
        Layer.provide(Settings.layer({}))
      ))
    ))
})
