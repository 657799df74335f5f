/**
 * Hundreds of clients leave mid-stream, some while streaming, some while still waiting for a slot
 * (key or account), and afterwards every slot and queue place is free: in process, and on Redis
 * when it is reachable (REDIS_TEST_URL; skipped with a warning otherwise, a failure in CI).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postResponses, sleep, waitFor } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { allFree, type SchedulingGateway, startSchedulingGateway, streamRequest } from "./gatewayHarness.js"
import { cleanupRedis, freshPrefix, REDIS_URL, redisReachable, requireServices } from "./redisHarness.js"

const KEY = "sk-aborts-0001"
const CLIENTS = 200

const config = (upstreamUrl: string) => ({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  // Limits far below the number of clients: many wait for a key slot, and for an account slot.
  users: [{ name: "alice", balance_usd: 1_000, concurrency: 4 }],
  keys: [{ key: KEY, user: "alice", group: "oa", name: "aborts-key" }],
  accounts: [
    { name: "acct-1", platform: "openai", base_url: `${upstreamUrl}/v1`, api_key_env: "UP_KEY", groups: ["oa"], concurrency: 1 },
    { name: "acct-2", platform: "openai", base_url: `${upstreamUrl}/v1`, api_key_env: "UP_KEY", groups: ["oa"], concurrency: 1 }
  ]
})

/** One client: starts a stream and leaves at a random moment (before the answer, or mid-stream). */
const impatientClient = async (gw: SchedulingGateway, i: number): Promise<void> => {
  const controller = new AbortController()
  // A third leave on a timer (often while still queued), the rest after a few bytes of the stream.
  const onTimer = i % 3 === 0
  const timer = onTimer ? setTimeout(() => controller.abort(), 20 + (i * 37) % 400) : undefined
  try {
    const res = await streamRequest(gw.url, KEY, { model: "gpt-5.4", input: `client ${i} says hello` }, controller.signal)
    const reader = res.body?.getReader()
    if (!reader) return
    const leaveAfter = 1 + (i % 5)
    for (let chunks = 0; chunks < leaveAfter || onTimer; chunks++) {
      const { done } = await reader.read()
      if (done) break
    }
    controller.abort()
  } catch {
    // The abort itself.
  } finally {
    clearTimeout(timer)
  }
}

const abortSuite = (name: string, redisPrefix: () => string | undefined) => {
  describe(name, () => {
    let upstream: FakeUpstream
    let gw: SchedulingGateway
    beforeAll(async () => {
      upstream = await startFakeUpstream()
      const prefix = redisPrefix()
      gw = await startSchedulingGateway({
        config: config(upstream.url),
        env: { UP_KEY: "sk-upstream" },
        settings: { slotQueueLimit: 1_000, slotWaitMillis: 10_000 },
        scheduling: { keepAliveMillis: 50, accountQueueLimit: 1_000 },
        ...(prefix === undefined ? {} : { redisPrefix: prefix })
      })
    })
    afterAll(async () => {
      await gw.close()
      await upstream.close()
    })

    it(`${CLIENTS} clients abort mid-stream or while queued; afterwards every slot is free`, async () => {
      upstream.setFault({ _tag: "SlowEvents", delayMs: 25 })
      // Meanwhile, watch that requests really queue, for the key and for the accounts.
      const seen = { key: false, account: false }
      let watching = true
      const watcher = (async () => {
        while (watching) {
          for (const p of await gw.stats()) {
            if (p.waiting > 0 && p.pool.startsWith("user:")) seen.key = true
            if (p.waiting > 0 && p.pool.startsWith("account:")) seen.account = true
          }
          await sleep(5)
        }
      })()
      await Promise.all(Array.from({ length: CLIENTS }, (_, i) => impatientClient(gw, i)))
      watching = false
      await watcher
      expect(seen).toEqual({ key: true, account: true })
      // Every request a client left is in the access log, as a 499.
      await waitFor(() => gw.logs.filter((l) => l.message === "request").length >= CLIENTS / 2)
      const logged = gw.logs.filter((l) => l.message === "request")
      expect(logged.map((l) => [l.annotations["status"], l.annotations["code"]])).toEqual(
        logged.map(() => [499, "client_closed_request"])
      )
      await waitFor(async () => allFree(await gw.stats()), 10_000)
      await waitFor(() => upstream.inFlight() === 0, 10_000)
      upstream.setFault(undefined)
      // And the gateway still serves at full width.
      await sleep(50)
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => postResponses(gw.url, KEY, { model: "gpt-5.4", input: `after ${i}` }))
      )
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 40 }, () => 200))
      await waitFor(async () => allFree(await gw.stats()))
    }, 60_000)
  })
}

abortSuite("client aborts, in-process scheduler", () => undefined)

const reachable = await redisReachable()
if (reachable) {
  afterAll(() => cleanupRedis())
  abortSuite("client aborts, Redis scheduler", freshPrefix)
} else if (requireServices) {
  describe("client aborts, Redis scheduler", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the Redis client-abort test (set REDIS_TEST_URL)`)
}
