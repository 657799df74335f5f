/**
 * The admitted turn (src/core/admittedTurn.ts) on the services' test layers, no socket: the order
 * of admission and where it stops, the key's slot given back before the settlement, failover facts,
 * and what is settled for a turn that completed, failed or was interrupted. Time is TestClock's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { AppConfig, Settings } from "../../src/config/AppConfig.js"
import { type AdmitTurn, makeAdmitTurn, type TurnPolicy } from "../../src/core/admittedTurn.js"
import { answerOf } from "../../src/core/upstreamCall.js"
import type { Rendered } from "../../src/core/settlement.js"
import type { TurnFailed } from "../../src/core/turnFacts.js"
import { RateLimited } from "../../src/domain/errors.js"
import type { Account, Principal } from "../../src/domain/model.js"
import { emptyUsage, type TokenUsage } from "../../src/domain/usage.js"
import { Moderation } from "../../src/services/moderation/Moderation.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { RateLimits, unlimited } from "../../src/services/rateLimits/RateLimits.js"
import { Scheduler } from "../../src/services/scheduler/Scheduler.js"
import { Upstream, wholeBody } from "../../src/services/upstream/Upstream.js"
import { testData } from "../support/gateway.js"

const data = testData({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"], moderation: "block" }],
  users: [{ name: "alice", balance_usd: 10 }],
  keys: [{ key: "sk-core-test-0001", user: "alice", group: "oa", name: "k" }],
  accounts: ["first", "second"].map((name) => ({
    name,
    platform: "openai",
    base_url: `http://${name}.invalid/v1`,
    api_key_env: "CORE_TEST_KEY",
    groups: ["oa"]
  }))
}, { CORE_TEST_KEY: "sk-upstream" })

const group = data.groups.get("oa")!
const principal: Principal = {
  key: {
    id: "k",
    sha256: "0".repeat(64),
    prefix: "sk-…",
    userName: "alice",
    groupName: "oa",
    status: "active",
    quotaMicros: undefined,
    quotaUsedMicros: 0,
    expiresAt: undefined,
    concurrency: undefined
  },
  user: { name: "alice", balanceMicros: 10_000_000, concurrency: 1 },
  group
}

const policy = (overrides: Partial<TurnPolicy> = {}): TurnPolicy => ({
  model: "gpt-5.4",
  stream: false,
  texts: () => ["hello"],
  wantsImageGeneration: false,
  providerTools: [],
  roughInputTokens: () => 2,
  ...overrides
})

const USAGE: TokenUsage = { ...emptyUsage, inputTokens: 11, outputTokens: 7 }

/** What the services saw, in order. */
const makeWorld = (options: {
  readonly statusOf?: (account: Account) => number
  readonly flag?: boolean
  readonly refuseLimits?: boolean
  readonly upstreamMillis?: number
  readonly hang?: Deferred.Deferred<void>
} = {}) => {
  const log: Array<string> = []
  const settled: Array<{ account: string | undefined; usage: TokenUsage }> = []
  const scheduler = Layer.effect(
    Scheduler,
    Effect.map(Effect.service(Scheduler), (base) => ({
      ...base,
      acquireKeySlot: () =>
        Effect.acquireRelease(
          Effect.sync(() => {
            log.push("key slot")
            return { _tag: "Granted" as const }
          }),
          () => Effect.sync(() => void log.push("key slot released"))
        )
    }))
  ).pipe(Layer.provide(Scheduler.layerTest(data.accounts)))
  const quota = Layer.effect(
    Quota,
    Effect.map(Effect.service(Quota), (base) => ({
      ...base,
      check: () => Effect.sync(() => void log.push("quota")),
      settle: (s: Parameters<typeof base.settle>[0]) =>
        Effect.flatMap(base.settle(s), (charged) =>
          Effect.sync(() => {
            log.push("settled")
            settled.push({ account: s.account, usage: s.usage })
            return charged
          }))
    }))
  ).pipe(Layer.provide(Quota.layerTest()))
  const layer = Layer.mergeAll(
    scheduler,
    quota,
    RateLimits.layerTest(() =>
      Effect.suspend(() => {
        log.push("limits")
        return options.refuseLimits === true
          ? Effect.fail(new RateLimited({ code: "requests_per_minute_exceeded", message: "slow down", retryAfterSeconds: 1 }))
          : Effect.succeed(unlimited)
      })
    ),
    Moderation.layerTest(() => {
      log.push("moderation")
      return options.flag === true ? { _tag: "Flag", category: "violence" } : { _tag: "Allow" }
    }),
    Upstream.layerTest((account) =>
      Effect.gen(function*() {
        log.push(`upstream ${account.name}`)
        if (options.upstreamMillis !== undefined) yield* Effect.sleep(options.upstreamMillis)
        if (options.hang !== undefined) yield* Deferred.await(options.hang)
        const status = options.statusOf?.(account) ?? 200
        const body = status === 200 ? JSON.stringify({ id: "resp_1", object: "response" }) : JSON.stringify({ error: { message: "down" } })
        return { status, headers: {}, body: wholeBody(new TextEncoder().encode(body)) }
      })
    ),
    AppConfig.layer(data, "test"),
    Settings.layer()
  )
  return { log, settled, layer }
}

/** A turn whose rendering answers with the account that answered and bills USAGE. */
const runTurn = (admit: AdmitTurn, turnPolicy: TurnPolicy = policy()) =>
  admit({
    requestId: "req-1",
    principal,
    policy: turnPolicy,
    session: undefined,
    plan: () => Effect.succeed({ build: () => ({ path: "/responses", body: "{}", stream: false }) }),
    render: (_plan, answer) =>
      Effect.map(answerOf(answer), (a): Rendered<string> => ({ answer: a.account.name, usage: Effect.succeed({ usage: USAGE, estimated: false }) }))
  })

/** Runs a turn in a Scope of its own, closed after it (as a request's scope is when its answer ends). */
const scopedTurn = (admit: AdmitTurn, turnPolicy?: TurnPolicy) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Scope.provide(runTurn(admit, turnPolicy), scope))
    yield* Scope.close(scope, Exit.void)
    return exit
  })

const failureOf = (exit: Exit.Exit<unknown, TurnFailed>) =>
  Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" ? (exit.cause.reasons[0].error as TurnFailed) : undefined

describe("the admitted turn, on test layers", () => {
  it.effect("admits in order: moderation, quota, limits, the key's slot, then the upstream; settles after the slot is back", () => {
    const world = makeWorld()
    return Effect.gen(function*() {
      const admit = yield* makeAdmitTurn
      const exit = yield* scopedTurn(admit)
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(world.log).toEqual(["moderation", "quota", "limits", "key slot", "upstream first", "key slot released", "settled"])
      expect(world.settled).toEqual([{ account: "first", usage: USAGE }])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a model the group does not offer is refused before anything else runs", () => {
    const world = makeWorld()
    return Effect.gen(function*() {
      const exit = yield* scopedTurn(yield* makeAdmitTurn, policy({ model: "gpt-unknown" }))
      expect(failureOf(exit)?.error._tag).toBe("ModelNotFound")
      expect(world.log).toEqual([])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a flagged text under a blocking group stops at moderation: no quota, no limit, no upstream, nothing settled", () => {
    const world = makeWorld({ flag: true })
    return Effect.gen(function*() {
      const exit = yield* scopedTurn(yield* makeAdmitTurn)
      expect(failureOf(exit)).toBeDefined()
      expect(world.log).toEqual(["moderation"])
      expect(world.settled).toEqual([])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a per-minute limit refuses after the quota check, before the slot and the upstream", () => {
    const world = makeWorld({ refuseLimits: true })
    return Effect.gen(function*() {
      const exit = yield* scopedTurn(yield* makeAdmitTurn)
      expect(failureOf(exit)?.error._tag).toBe("RateLimited")
      expect(world.log).toEqual(["moderation", "quota", "limits"])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("fails over from a 500 and reports both attempts with their latency on the Clock", () => {
    const world = makeWorld({ statusOf: (a) => (a.name === "first" ? 500 : 200), upstreamMillis: 40 })
    return Effect.gen(function*() {
      const admit = yield* makeAdmitTurn
      const scope = yield* Scope.make()
      const fiber = yield* Effect.forkChild(Scope.provide(runTurn(admit), scope))
      yield* TestClock.adjust(40)
      yield* TestClock.adjust(40)
      const turn = yield* Fiber.join(fiber)
      expect(turn.answer).toBe("second")
      const outcome = yield* turn.facts.outcome
      expect(outcome.attempts).toEqual([
        { account: "first", status: 500, latencyMs: 40 },
        { account: "second", status: 200, latencyMs: 40 }
      ])
      yield* Scope.close(scope, Exit.void)
      expect(world.settled).toEqual([{ account: "second", usage: USAGE }])
      expect((yield* turn.facts.outcome).settled).toMatchObject({ inputTokens: 11, outputTokens: 7, costMicros: 0 })
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a turn whose every account failed settles nothing and carries its attempts", () => {
    const world = makeWorld({ statusOf: () => 503 })
    return Effect.gen(function*() {
      const exit = yield* scopedTurn(yield* makeAdmitTurn)
      const failed = failureOf(exit)
      expect(failed?.error._tag).toBe("UpstreamFailed")
      expect((yield* failed!.facts.outcome).attempts.map((a) => [a.account, a.status])).toEqual([["first", 503], ["second", 503]])
      expect(world.settled).toEqual([])
      expect(world.log.filter((l) => l === "key slot released")).toHaveLength(1)
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a turn interrupted while the upstream is answering gives its slot back and settles nothing (nothing was rendered)", () => {
    return Effect.gen(function*() {
      const hang = yield* Deferred.make<void>()
      const world = makeWorld({ hang })
      yield* Effect.gen(function*() {
        const admit = yield* makeAdmitTurn
        const scope = yield* Scope.make()
        const fiber = yield* Effect.forkChild(Scope.provide(runTurn(admit), scope))
        yield* Effect.yieldNow
        yield* Fiber.interrupt(fiber)
        yield* Scope.close(scope, Exit.void)
        expect(world.log).toEqual(["moderation", "quota", "limits", "key slot", "upstream first", "key slot released"])
        expect(world.settled).toEqual([])
      }).pipe(Effect.provide(world.layer))
    })
  })
})
