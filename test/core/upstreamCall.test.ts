/**
 * The upstream call (src/core/upstreamCall.ts) on the services' test layers, no socket: failover
 * and where it stops, what the Scheduler is told of each attempt (and, for a call that must not
 * change an account's health, nothing), a stream answered with a page instead of events, and a
 * call that hands back its wait for a busy account. Latencies come from TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { answerOf, type CallFailed, type CallInput, makeUpstreamCaller } from "../../src/core/upstreamCall.js"
import type { Account, Principal } from "../../src/domain/model.js"
import { Scheduler, type UpstreamOutcome } from "../../src/services/scheduler/Scheduler.js"
import { Upstream, wholeBody } from "../../src/services/upstream/Upstream.js"
import { testData } from "../support/gateway.js"

const data = testData({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 10 }],
  keys: [{ key: "sk-call-test-0001", user: "alice", group: "oa", name: "k" }],
  accounts: ["first", "second", "third"].map((name) => ({
    name,
    platform: "openai",
    base_url: `http://${name}.invalid/v1`,
    api_key_env: "CALL_TEST_KEY",
    groups: ["oa"]
  }))
}, { CALL_TEST_KEY: "sk-upstream" })

const principal = { group: data.groups.get("oa")! } as Principal

interface Scripted {
  readonly status: number
  readonly contentType?: string
  readonly millis?: number
}

/** The accounts answer as `script` says; the Scheduler's reports and grants are logged. */
const makeWorld = (script: (account: Account) => Scripted, options: { readonly queueFirst?: boolean } = {}) => {
  const reports: Array<[string, UpstreamOutcome["_tag"], number | undefined]> = []
  const scheduler = Layer.effect(
    Scheduler,
    Effect.map(Effect.service(Scheduler), (base) => ({
      ...base,
      acquireAccount: (req: Parameters<typeof base.acquireAccount>[0]) =>
        Effect.map(base.acquireAccount(req), (ticket) =>
          options.queueFirst === true && ticket._tag === "Granted" && req.exclude.size === 0
            ? { _tag: "Queued" as const, account: ticket.account, wait: Effect.sleep(500), release: ticket.release }
            : ticket),
      report: (account: Account, outcome: UpstreamOutcome) =>
        Effect.sync(() => void reports.push([account.name, outcome._tag, outcome._tag === "Failure" ? outcome.status : undefined]))
    }))
  ).pipe(Layer.provide(Scheduler.layerTest(data.accounts)))
  const upstream = Upstream.layerTest((account, request) =>
    Effect.gen(function*() {
      const answer = script(account)
      if (answer.millis !== undefined) yield* Effect.sleep(answer.millis)
      const body = answer.status === 200 && request.stream
        ? "event: response.created\ndata: {}\n\n"
        : JSON.stringify(answer.status === 200 ? { id: "resp_1" } : { error: { message: "no" } })
      return {
        status: answer.status,
        headers: { "content-type": answer.contentType ?? (request.stream ? "text/event-stream" : "application/json") },
        body: wholeBody(new TextEncoder().encode(body))
      }
    })
  )
  return { reports, layer: Layer.merge(scheduler, upstream) }
}

const input = (overrides: Partial<CallInput> = {}): CallInput => ({
  requestId: "req-1",
  principal,
  model: "gpt-5.4",
  session: undefined,
  build: () => ({ path: "/responses", body: "{}", stream: false }),
  span: undefined,
  ...overrides
})

const call = (callInput: CallInput, mayWait = false) =>
  Effect.gen(function*() {
    const caller = yield* makeUpstreamCaller
    const scope = yield* Scope.make()
    const exit = yield* Effect.exit(Scope.provide(Effect.flatMap(caller(callInput, mayWait), answerOf), scope))
    yield* Scope.close(scope, Exit.void)
    return exit
  })

const failed = (exit: Exit.Exit<unknown, CallFailed>) =>
  Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" ? (exit.cause.reasons[0].error as CallFailed) : undefined

describe("the upstream call, on test layers", () => {
  it.effect("fails over a 429 and a 500 to the third account, telling the Scheduler of each attempt", () => {
    const world = makeWorld((a) => ({ status: a.name === "first" ? 429 : a.name === "second" ? 500 : 200, millis: 25 }))
    return Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(call(input()))
      for (let i = 0; i < 3; i++) yield* TestClock.adjust(25)
      const exit = yield* Fiber.join(fiber)
      expect(Exit.isSuccess(exit)).toBe(true)
      if (Exit.isSuccess(exit)) {
        expect(exit.value.account.name).toBe("third")
        expect(exit.value.attempts).toEqual([
          { account: "first", status: 429, latencyMs: 25 },
          { account: "second", status: 500, latencyMs: 25 },
          { account: "third", status: 200, latencyMs: 25 }
        ])
      }
      expect(world.reports).toEqual([["first", "Failure", 429], ["second", "Failure", 500], ["third", "Success", undefined]])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("does not fail over a request the upstream refused (400): one attempt, the upstream's words", () => {
    const world = makeWorld(() => ({ status: 400 }))
    return Effect.gen(function*() {
      const error = failed(yield* call(input()))
      expect(error?.error._tag).toBe("UpstreamFailed")
      expect(error?.attempts.map((a) => a.account)).toEqual(["first"])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a call that must not change an account's health reports nothing, failing or not", () => {
    const world = makeWorld((a) => ({ status: a.name === "first" ? 429 : 200 }))
    return Effect.gen(function*() {
      const exit = yield* call(input({ reportsHealth: false }))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(world.reports).toEqual([])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("a stream answered 200 with a page, not events, is upstream_invalid_response and moves on", () => {
    const world = makeWorld((a) => (a.name === "first" ? { status: 200, contentType: "text/html" } : { status: 200 }))
    return Effect.gen(function*() {
      const exit = yield* call(input({ build: () => ({ path: "/responses", body: "{}", stream: true }) }))
      expect(Exit.isSuccess(exit) && exit.value.account.name).toBe("second")
      expect(world.reports[0]).toEqual(["first", "Failure", 502])
    }).pipe(Effect.provide(world.layer))
  })

  it.effect("when the account is busy, a call that may wait hands the wait back, and it answers once the slot is free", () => {
    const world = makeWorld(() => ({ status: 200 }), { queueFirst: true })
    return Effect.gen(function*() {
      const caller = yield* makeUpstreamCaller
      const scope = yield* Scope.make()
      const step = yield* Scope.provide(caller(input(), true), scope)
      expect(step._tag).toBe("Waiting")
      const fiber = yield* Effect.forkChild(answerOf(step))
      yield* TestClock.adjust(499)
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      const answer = yield* Fiber.join(fiber)
      expect(answer.account.name).toBe("first")
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(world.layer))
  })
})
