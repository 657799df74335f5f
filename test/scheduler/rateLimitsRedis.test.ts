/**
 * Per-minute rate limits on Redis (src/services/rateLimits/redis.ts; REDIS_TEST_URL, default
 * redis://127.0.0.1:6379, a fresh key prefix per test): several instances on one Redis and prefix
 * hold ONE limit, not one each; a refusal by one limit charges none across instances; the token
 * estimate is settled through Redis; buckets drain on Redis's clock and expire once drained; two real
 * gateways sharing a key's rpm_limit cap the combined count over HTTP.
 * Skipped with a warning when Redis is unreachable, unless MODELGATE_REQUIRE_SERVICES=1 (CI).
 */
import { Cause, Effect, Exit, ManagedRuntime, Option } from "effect"
import { Redis } from "ioredis"
import { afterAll, describe, expect, it } from "vitest"
import type { RateLimited, StoreError } from "../../src/domain/errors.js"
import type { Principal } from "../../src/domain/model.js"
import { type Admission, RateLimits } from "../../src/services/rateLimits/RateLimits.js"
import * as RateLimitsRedis from "../../src/services/rateLimits/redis.js"
import { expectEnvelope, postResponses } from "../http/helpers.js"
import { startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway } from "../support/gateway.js"
import { testPrincipal } from "../support/principal.js"
import { cleanupRedis, freshPrefix, REDIS_URL, redisReachable, requireServices } from "./redisHarness.js"

const reachable = await redisReachable()

/** A RateLimits instance as a gateway holds it: built once on Redis, disposed at the end. */
const instance = (prefix: string) => ManagedRuntime.make(RateLimitsRedis.layer({ url: REDIS_URL, prefix }))
type Instance = ReturnType<typeof instance>

const admit = (rt: Instance, principal: Principal, tokens = 0): Promise<Exit.Exit<Admission, RateLimited | StoreError>> =>
  rt.runPromiseExit(Effect.flatMap(RateLimits, (limits) => limits.admit(principal, () => tokens)))

const admitted = async (rt: Instance, principal: Principal, tokens = 0): Promise<Admission> => {
  const exit = await admit(rt, principal, tokens)
  if (Exit.isFailure(exit)) throw new Error(`expected an admission, got ${JSON.stringify(exit.cause)}`)
  return exit.value
}

const refused = async (rt: Instance, principal: Principal, tokens = 0): Promise<RateLimited> => {
  const exit = await admit(rt, principal, tokens)
  if (Exit.isSuccess(exit)) throw new Error(`expected a refusal, got headers ${JSON.stringify(exit.value.headers)}`)
  const failure = Cause.findErrorOption(exit.cause).pipe(Option.getOrUndefined)
  if (failure?._tag !== "RateLimited") throw new Error(`expected RateLimited, got ${JSON.stringify(exit.cause)}`)
  return failure
}

const limited = (key: Partial<Principal["key"]> = {}, group: Partial<Principal["group"]> = {}): Principal => {
  const p = testPrincipal({ key: `k-${Math.random().toString(36).slice(2, 8)}` })
  return { ...p, key: { ...p.key, ...key }, group: { ...p.group, ...group } }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

if (reachable) {
  afterAll(() => cleanupRedis())

  describe("per-minute rate limits on Redis: several instances, one limit", () => {
    it("two instances alternating hold one key limit: exactly the limit is admitted in all", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      try {
        const p = limited({ rpmLimit: 5 })
        const outcomes: Array<string> = []
        for (let i = 0; i < 10; i++) {
          const exit = await admit(i % 2 === 0 ? a : b, p)
          outcomes.push(
            Exit.isSuccess(exit)
              ? `ok ${exit.value.headers["x-ratelimit-remaining-requests"]}`
              : Option.match(Cause.findErrorOption(exit.cause), {
                onNone: () => "defect",
                onSome: (error) => (error._tag === "RateLimited" ? error.code : "store")
              })
          )
        }
        // One count across both: remaining goes 4..0 whichever instance admitted, then both refuse.
        expect(outcomes).toEqual([
          "ok 4",
          "ok 3",
          "ok 2",
          "ok 1",
          "ok 0",
          ...Array<string>(5).fill("requests_per_minute_exceeded")
        ])
        const refusal = await refused(b, p)
        expect(refusal.retryAfterSeconds).toBeGreaterThanOrEqual(10)
        expect(refusal.retryAfterSeconds).toBeLessThanOrEqual(12)
        expect(refusal.headers).toMatchObject({ "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0" })
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("many concurrent admissions on two instances: never more than the limit", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      try {
        const p = limited({ rpmLimit: 7 })
        const exits = await Promise.all(Array.from({ length: 30 }, (_, i) => admit(i % 2 === 0 ? a : b, p)))
        expect(exits.filter(Exit.isSuccess)).toHaveLength(7)
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("another prefix is another set of limits", async () => {
      const a = instance(freshPrefix())
      const b = instance(freshPrefix())
      try {
        const p = limited({ rpmLimit: 1 })
        await admitted(a, p)
        await refused(a, p)
        expect((await admitted(b, p)).headers["x-ratelimit-remaining-requests"]).toBe("0")
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("a refusal by the group's token limit charges none of the key's requests, on either instance", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      try {
        const p = limited({ rpmLimit: 3 }, { tpmLimit: 100 })
        const tooBig = await refused(a, p, 150)
        expect(tooBig).toMatchObject({ code: "tokens_per_minute_exceeded", retryAfterSeconds: 60 })
        await admitted(b, p, 60)
        // 60 + 60 > 100: refused by the group's tokens; the key's request count stays at 1.
        expect((await refused(a, p, 60)).code).toBe("tokens_per_minute_exceeded")
        const next = await admitted(a, p, 10)
        expect(next.headers["x-ratelimit-remaining-requests"]).toBe("1")
        expect(next.headers["x-ratelimit-remaining-tokens"]).toBe("30")
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("the token estimate is settled through Redis: real use below it gives room back, above it takes room", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      const b = instance(prefix)
      try {
        const p = limited({ tpmLimit: 100 })
        const first = await admitted(a, p, 80)
        expect(first.headers["x-ratelimit-remaining-tokens"]).toBe("20")
        expect((await refused(b, p, 30)).code).toBe("tokens_per_minute_exceeded")
        await a.runPromise(first.settle(10))
        const second = await admitted(b, p, 30)
        expect(second.headers["x-ratelimit-remaining-tokens"]).toBe("60")
        await b.runPromise(second.settle(95)) // the upstream reported more than estimated
        const refusal = await refused(a, p, 1)
        expect(refusal.code).toBe("tokens_per_minute_exceeded")
        expect(refusal.headers?.["x-ratelimit-remaining-tokens"]).toBe("0")
      } finally {
        await a.dispose()
        await b.dispose()
      }
    })

    it("a request that can never fit is the refusal reported, even when another bucket would take longer to drain", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      try {
        // The key's bucket ends well over its 300 (a settlement above the estimate): 580 used.
        const keyOnly = limited({ tpmLimit: 300 })
        const first = await admitted(a, keyOnly, 10)
        await a.runPromise(first.settle(580))
        // The same key in a group allowing 50 tokens a minute, asking for 100: the key would
        // make it wait 76 s, but the group can never take it, and that is what is said.
        const inSmallGroup: Principal = { ...keyOnly, group: { ...keyOnly.group, name: "small", tpmLimit: 50 } }
        const refusal = await refused(a, inSmallGroup, 100)
        expect(refusal).toMatchObject({ code: "tokens_per_minute_exceeded", retryAfterSeconds: 60 })
        expect(refusal.message).toMatch(/about 100 tokens.*this key's group/)
        expect(refusal.headers?.["x-should-retry"]).toBe("false")
      } finally {
        await a.dispose()
      }
    })

    it("buckets drain on Redis's clock and expire once drained", async () => {
      const prefix = freshPrefix()
      const a = instance(prefix)
      try {
        // 6000 tokens a minute: 100 a second drain.
        const p = limited({ tpmLimit: 6_000 })
        await admitted(a, p, 6_000)
        expect((await refused(a, p, 10)).code).toBe("tokens_per_minute_exceeded")
        await sleep(300)
        const later = await admitted(a, p, 10)
        expect(Number(later.headers["x-ratelimit-remaining-tokens"])).toBeGreaterThanOrEqual(10)
        expect(Number(later.headers["x-ratelimit-remaining-tokens"])).toBeLessThan(100)
        // The bucket's key lives only as long as the bucket takes to drain (plus a second).
        const client = new Redis(REDIS_URL)
        try {
          const keys = await client.keys(`${prefix}rl:*`)
          expect(keys).toEqual([`${prefix}rl:key:${p.key.id}:tokens`])
          const ttl = await client.pttl(keys[0]!)
          expect(ttl).toBeGreaterThan(50_000)
          expect(ttl).toBeLessThanOrEqual(61_000)
        } finally {
          client.disconnect()
        }
      } finally {
        await a.dispose()
      }
    })

    it("Redis unreachable at start: the layer fails with a message naming the address", async () => {
      const rt = ManagedRuntime.make(RateLimitsRedis.layer({ url: "redis://127.0.0.1:1", prefix: freshPrefix() }))
      try {
        const exit = await rt.runPromiseExit(RateLimits)
        expect(Exit.isFailure(exit)).toBe(true)
        expect(JSON.stringify(exit)).toMatch(/127\.0\.0\.1:1/)
      } finally {
        await rt.dispose().catch(() => undefined)
      }
    })
  })

  describe("per-minute rate limits on Redis: two gateways over HTTP", () => {
    it("two gateways on one Redis share a key's rpm_limit: the combined count is capped", async () => {
      const upstream = await startFakeUpstream()
      const prefix = freshPrefix()
      const base = fakeUpstreamConfig(upstream.url)
      const config = { ...base, keys: base.keys.map((k) => (k.name === "oa-key" ? { ...k, rpm_limit: 3 } : k)) }
      const start = () =>
        startGateway({ config, env: fakeUpstreamEnv, services: { rateLimits: RateLimitsRedis.layer({ url: REDIS_URL, prefix }) } })
      const one = await start()
      const two = await start()
      try {
        const key = "sk-test-openai-0001"
        const answers = []
        for (let i = 0; i < 6; i++) {
          answers.push(await postResponses((i % 2 === 0 ? one : two).url, key, { model: "gpt-5.4", input: `call ${i}` }))
        }
        expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429, 429])
        expect(answers.slice(0, 3).map((a) => a.headers.get("x-ratelimit-remaining-requests"))).toEqual(["2", "1", "0"])
        for (const refusal of answers.slice(3)) {
          expectEnvelope(refusal, { status: 429, type: "rate_limit_error", code: "requests_per_minute_exceeded" })
          expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
          expect(refusal.headers.get("x-ratelimit-remaining-requests")).toBe("0")
        }
        // Only the admitted requests reached the upstream.
        expect(upstream.requests.length).toBe(3)
        // The limit is the key's: another key of the same user is still answered.
        expect((await postResponses(two.url, "sk-test-anthropic-0001", { model: "claude-sonnet-4-6", input: "hi" })).status).toBe(200)
      } finally {
        await one.close()
        await two.close()
        await upstream.close()
      }
    })
  })
} else if (requireServices) {
  describe("per-minute rate limits on Redis", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the Redis rate-limit tests (set REDIS_TEST_URL)`)
  describe.skip(`per-minute rate limits on Redis (skipped: not reachable at ${REDIS_URL})`, () => {
    it("holds one limit across instances on Redis", () => undefined)
  })
}
