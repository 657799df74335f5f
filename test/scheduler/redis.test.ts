/**
 * The scheduler on Redis (REDIS_TEST_URL, default redis://127.0.0.1:6379; a fresh key prefix per
 * scheduler): the shared behavioural suite, then what only a shared store can show: two instances
 * share limits, queues, sessions and cooldowns; a crashed instance's slots drain by themselves;
 * leases outlive their TTL while the request lives; Redis down at start is a clear error; Redis lost
 * mid-flight fails requests cleanly and recovers when it returns.
 * Skipped with a warning when Redis is unreachable, unless MODELGATE_REQUIRE_SERVICES=1 (CI).
 */
import { spawn } from "node:child_process"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option, Result, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { StoreError } from "../../src/domain/errors.js"
import { Scheduler, type SchedulerTestOptions } from "../../src/services/scheduler/Scheduler.js"
import {
  cleanupRedis,
  freshPrefix,
  privateRedis,
  REDIS_URL,
  redisReachable,
  redisServerAvailable,
  requireServices
} from "./redisHarness.js"
import { principalOf, schedulerSuite, suiteData, suiteOptions } from "./suite.js"
import * as SchedulerRedis from "../../src/services/scheduler/redis.js"

const reachable = await redisReachable()

const redisLayer = (prefix: string, options: SchedulerTestOptions = suiteOptions, url = REDIS_URL) =>
  SchedulerRedis.layerTest(suiteData, { url, prefix }, options)

/** A scheduler instance as a gateway holds it: built once, used by many requests, disposed at the end. */
const instance = (prefix: string, options: SchedulerTestOptions = suiteOptions, url = REDIS_URL) =>
  ManagedRuntime.make(redisLayer(prefix, options, url))

const own = principalOf(suiteData, "k-own")

if (reachable) {
  afterAll(() => cleanupRedis())

  describe("Redis scheduler", () => {
    schedulerSuite((_data, options) => redisLayer(freshPrefix(), options))
  })

  describe("Redis scheduler: several instances", () => {
    it("two instances share a key's limit and queue; a release on one wakes a waiter on the other", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      try {
        const scopeA = await Effect.runPromise(Scope.make())
        const heldA = await a.runPromise(Effect.flatMap(Scheduler, (s) => Scope.provide(s.acquireKeySlot(own), scopeA)))
        expect(heldA._tag).toBe("Granted")
        // k-own allows 1: instance B must queue, and a third request finds the shared queue full.
        const scopeB = await Effect.runPromise(Scope.make())
        const queued = await b.runPromise(Effect.flatMap(Scheduler, (s) => Scope.provide(s.acquireKeySlot(own), scopeB)))
        expect(queued._tag).toBe("Queued")
        const refused = await a.runPromise(Effect.scoped(Effect.flip(Effect.flatMap(Scheduler, (s) => s.acquireKeySlot(own)))))
        expect(refused).toMatchObject({ _tag: "RateLimited", code: "too_many_pending_requests" })
        if (queued._tag !== "Queued") throw new Error("expected queued")
        const waiting = b.runPromise(Effect.as(queued.wait, Date.now()))
        await new Promise((r) => setTimeout(r, 100))
        const releasedAt = Date.now()
        await Effect.runPromise(Scope.close(scopeA, Exit.void))
        const grantedAt = await waiting
        // Promptly (a release notification wakes it; the poll is only the fallback).
        expect(grantedAt - releasedAt).toBeLessThan(1_000)
        await Effect.runPromise(Scope.close(scopeB, Exit.void))
        const stats = await a.runPromise(Effect.flatMap(Scheduler, (s) => s.stats))
        expect(stats.find((p) => p.pool === "key:k-own")?.inUse ?? 0).toBe(0)
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("sticky sessions, cooldowns and take-outs are shared", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      const g = suiteData.groups.get("g")
      const solo = suiteData.groups.get("solo")
      const s1 = suiteData.accounts.find((x) => x.name === "s1")
      if (!g || !solo || !s1) throw new Error("suite data")
      const pickOn = (rt: typeof a, session: string | undefined, group = g) =>
        rt.runPromise(Effect.scoped(Effect.flatMap(Scheduler, (s) =>
          Effect.map(s.acquireAccount({ group, model: "gpt", session, exclude: new Set() }), (t) => t.account.name))))
      try {
        expect(await pickOn(a, "S")).toBe("a1")
        expect(await pickOn(b, undefined)).toBe("a2")
        expect(await pickOn(b, undefined)).toBe("a1")
        // B follows the binding A made, against its LRU order.
        expect(await pickOn(b, "S")).toBe("a1")
        // A cooldown recorded by A holds on B.
        await a.runPromise(Effect.flatMap(Scheduler, (s) =>
          s.report(s1, { _tag: "Failure", status: 429, headers: { "retry-after": "30" }, code: undefined })))
        const none = await b.runPromise(Effect.scoped(Effect.flip(Effect.flatMap(Scheduler, (s) =>
          s.acquireAccount({ group: solo, model: "gpt", session: undefined, exclude: new Set() })))))
        expect(none).toMatchObject({ _tag: "NoAvailableAccount" })
        // A take-out recorded by B hides the account on A; reinstating on A brings it back on B.
        await a.runPromise(Effect.flatMap(Scheduler, (s) => s.reinstate("s1")))
        // A 401 on A and a second on B: the strike is shared too, so the pair takes it out.
        await a.runPromise(Effect.flatMap(Scheduler, (s) =>
          s.report(s1, { _tag: "Failure", status: 401, headers: {}, code: undefined })))
        expect((await a.runPromise(Effect.flatMap(Scheduler, (s) => s.accounts(solo)))).map((x) => x.name)).toEqual(["s1"])
        await b.runPromise(Effect.flatMap(Scheduler, (s) =>
          s.report(s1, { _tag: "Failure", status: 401, headers: {}, code: undefined })))
        expect(await a.runPromise(Effect.flatMap(Scheduler, (s) => s.accounts(solo)))).toEqual([])
        await a.runPromise(Effect.flatMap(Scheduler, (s) => s.reinstate("s1")))
        expect(await pickOn(b, undefined, solo)).toBe("s1")
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("a lease outlives its TTL while the request lives (renewed), and is gone when it ends", async () => {
      const prefix = freshPrefix()
      const options: SchedulerTestOptions = { ...suiteOptions, scheduling: { ...suiteOptions.scheduling, redisLeaseMillis: 600 } }
      const a = instance(prefix, options)
      const b = instance(prefix, options)
      try {
        const scope = await Effect.runPromise(Scope.make())
        await a.runPromise(Effect.flatMap(Scheduler, (s) => Scope.provide(s.acquireKeySlot(own), scope)))
        await new Promise((r) => setTimeout(r, 1_800))
        const stillHeld = await b.runPromise(Effect.scoped(Effect.flatMap(Scheduler, (s) => s.acquireKeySlot(own))))
        expect(stillHeld._tag).toBe("Queued")
        await Effect.runPromise(Scope.close(scope, Exit.void))
        const free = await b.runPromise(Effect.scoped(Effect.flatMap(Scheduler, (s) => s.acquireKeySlot(own))))
        expect(free._tag).toBe("Granted")
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("a crashed instance's slots drain by themselves within the lease time", async () => {
      const prefix = freshPrefix()
      const leaseMillis = 1_000
      // A real process holds the slot, then is killed with SIGKILL: no finalizer, no release.
      const child = spawn(process.execPath, ["--import", "tsx", "test/scheduler/fixtures/holdSlot.ts"], {
        env: { ...process.env, REDIS_TEST_URL: REDIS_URL, HOLD_PREFIX: prefix, HOLD_LEASE_MS: String(leaseMillis) },
        stdio: ["ignore", "pipe", "inherit"]
      })
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on("data", (d: Buffer) => {
          if (d.toString().includes("held")) resolve()
        })
        child.once("exit", (code) => reject(new Error(`holder exited early (${code})`)))
      })
      const b = instance(prefix, { ...suiteOptions, scheduling: { ...suiteOptions.scheduling, redisLeaseMillis: leaseMillis } })
      try {
        const tryKey = () => b.runPromise(Effect.scoped(Effect.flatMap(Scheduler, (s) => Effect.map(s.acquireKeySlot(own), (t) => t._tag))))
        // Held while the holder lives (it renews).
        await new Promise((r) => setTimeout(r, leaseMillis * 2))
        expect(await tryKey()).toBe("Queued")
        child.kill("SIGKILL")
        const killedAt = Date.now()
        await new Promise((r) => child.once("exit", r))
        let tag = await tryKey()
        while (tag !== "Granted" && Date.now() - killedAt < leaseMillis * 4) {
          await new Promise((r) => setTimeout(r, 50))
          tag = await tryKey()
        }
        expect(tag).toBe("Granted")
        expect(Date.now() - killedAt).toBeLessThan(leaseMillis * 3)
      } finally {
        child.kill("SIGKILL")
        await b.dispose()
      }
    })
  })

  describe("Redis scheduler: Redis away", () => {
    it("Redis down at start: building the scheduler fails with a message naming the address", async () => {
      const exit = await Effect.runPromiseExit(Layer.build(
        SchedulerRedis.layer({ url: "redis://127.0.0.1:1" }).pipe(
          Layer.provide(AppConfig.layer(suiteData, "test")),
          Layer.provide(Settings.layer())
        )
      ).pipe(Effect.scoped))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const error = Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)
        expect(error).toBeInstanceOf(StoreError)
        expect((error as StoreError).message).toMatch(/^Redis at redis:\/\/127\.0\.0\.1:1 is unreachable .*REDIS_URL/)
      }
    })

    it.runIf(redisServerAvailable())("Redis lost mid-flight: requests fail at once with StoreError, and work again when it returns", async () => {
      const server = await privateRedis()
      await server.start()
      const rt = instance(freshPrefix(), suiteOptions, server.url)
      const key = () => rt.runPromise(Effect.scoped(Effect.result(Effect.flatMap(Scheduler, (s) => s.acquireKeySlot(own)))))
      try {
        // A request in flight holds its slot when Redis goes away.
        const scope = await Effect.runPromise(Scope.make())
        expect((await rt.runPromise(Effect.flatMap(Scheduler, (s) => Scope.provide(s.acquireKeySlot(own), scope))))._tag).toBe("Granted")
        await server.stop()
        const started = Date.now()
        const during = await key()
        expect(Date.now() - started).toBeLessThan(3_000)
        expect(Result.isFailure(during)).toBe(true)
        if (Result.isFailure(during)) expect(during.failure).toBeInstanceOf(StoreError)
        // Its release cannot reach Redis: logged, not a defect.
        await Effect.runPromise(Scope.close(scope, Exit.void))
        // Listing accounts falls back to the configuration.
        const solo = suiteData.groups.get("solo")
        if (!solo) throw new Error("suite data")
        expect((await rt.runPromise(Effect.flatMap(Scheduler, (s) => s.accounts(solo)))).map((a) => a.name)).toEqual(["s1"])
        await server.start()
        const deadline = Date.now() + 10_000
        let after = await key()
        while (Result.isFailure(after) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100))
          after = await key()
        }
        expect(after).toMatchObject({ _tag: "Success", success: { _tag: "Granted" } })
      } finally {
        await rt.dispose()
        await server.stop()
      }
    }, 30_000)
  })
} else if (requireServices) {
  describe("Redis scheduler", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the Redis scheduler suite (set REDIS_TEST_URL)`)
  describe.skip(`Redis scheduler (skipped: not reachable at ${REDIS_URL})`, () => {
    it("runs the scheduler suite on Redis", () => undefined)
  })
}
