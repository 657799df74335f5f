/**
 * Two gateway instances on one Redis (one key prefix): the limits do not multiply with the number
 * of instances. A user's concurrency, an account's concurrency and a queue's length hold across
 * both. Needs Redis (REDIS_TEST_URL): skipped with a warning when unreachable, a failure in CI.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { expectEnvelope, postResponses, readEvents, waitFor } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { allFree, type SchedulingGateway, startSchedulingGateway, streamRequest, watchInFlight } from "./gatewayHarness.js"
import { cleanupRedis, freshPrefix, REDIS_URL, redisReachable, requireServices } from "./redisHarness.js"

const KEY = "sk-shared-0001"
const reachable = await redisReachable()

const config = (upstreamUrl: string, user: number, account: number) => ({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100, concurrency: user }],
  keys: [{ key: KEY, user: "alice", group: "oa", name: "shared-key" }],
  accounts: [{
    name: "shared-acct",
    platform: "openai",
    base_url: `${upstreamUrl}/v1`,
    api_key_env: "UP_KEY",
    groups: ["oa"],
    concurrency: account
  }]
})

if (reachable) {
  describe("two gateway instances on one Redis", () => {
    let upstream: FakeUpstream
    let gateways: Array<SchedulingGateway> = []
    beforeAll(async () => {
      upstream = await startFakeUpstream()
    })
    afterEach(async () => {
      upstream.setFault(undefined)
      await Promise.all(gateways.map((g) => g.close()))
      gateways = []
    })
    afterAll(async () => {
      await upstream.close()
      await cleanupRedis()
    })

    const pair = async (user: number, account: number, settings: { slotQueueLimit: number; slotWaitMillis: number }) => {
      const prefix = freshPrefix()
      const start = () =>
        startSchedulingGateway({
          config: config(upstream.url, user, account),
          env: { UP_KEY: "sk-upstream" },
          settings,
          scheduling: { keepAliveMillis: 200 },
          redisPrefix: prefix
        })
      gateways = [await start(), await start()]
      return gateways as [SchedulingGateway, SchedulingGateway]
    }

    let n = 0
    const streamOn = async (g: SchedulingGateway) => {
      const res = await streamRequest(g.url, KEY, { model: "gpt-5.4", input: `shared limits ${++n}` })
      return readEvents(res)
    }

    it("a user's concurrency limit holds across both instances; everyone is served in turn", async () => {
      const [g1, g2] = await pair(2, 50, { slotQueueLimit: 20, slotWaitMillis: 15_000 })
      upstream.setFault({ _tag: "SlowEvents", delayMs: 20 })
      const watch = watchInFlight([upstream])
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => streamOn(i % 2 === 0 ? g1 : g2)))
      const max = watch.stop()
      expect(max).toBe(2)
      for (const r of results) expect(r.events.at(-1)?.["type"]).toBe("response.completed")
      await waitFor(async () => allFree(await g1.stats()))
    })

    it("an account's concurrency limit holds across both instances", async () => {
      const [g1, g2] = await pair(50, 1, { slotQueueLimit: 20, slotWaitMillis: 15_000 })
      upstream.setFault({ _tag: "SlowEvents", delayMs: 20 })
      const watch = watchInFlight([upstream])
      const results = await Promise.all(Array.from({ length: 4 }, (_, i) => streamOn(i % 2 === 0 ? g1 : g2)))
      expect(watch.stop()).toBe(1)
      for (const r of results) expect(r.events.at(-1)?.["type"]).toBe("response.completed")
    })

    it("the queue's length is shared: a request on the other instance finds it full", async () => {
      const [g1, g2] = await pair(1, 50, { slotQueueLimit: 1, slotWaitMillis: 15_000 })
      upstream.setFault({ _tag: "SlowEvents", delayMs: 40 })
      const holding = streamOn(g1)
      await waitFor(() => upstream.inFlight() === 1)
      const queued = postResponses(g1.url, KEY, { model: "gpt-5.4", input: "queued on g1" })
      await waitFor(async () => (await g1.stats()).some((p) => p.pool === "user:alice" && p.waiting === 1))
      const refused = await postResponses(g2.url, KEY, { model: "gpt-5.4", input: "refused on g2" })
      expectEnvelope(refused, { status: 429, type: "rate_limit_error", code: "too_many_pending_requests" })
      expect((await holding).events.at(-1)?.["type"]).toBe("response.completed")
      expect((await queued).status).toBe(200)
    })
  })
} else if (requireServices) {
  describe("two gateway instances on one Redis", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the two-instance tests (set REDIS_TEST_URL)`)
  describe.skip(`two gateway instances on one Redis (skipped: not reachable at ${REDIS_URL})`, () => {
    it("shares limits", () => undefined)
  })
}
