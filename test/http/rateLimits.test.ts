/**
 * Requests and tokens per minute (`rpm_limit` / `tpm_limit` on keys, users and groups; issue 18)
 * through a real gateway over HTTP, with the fake upstream behind it: the 429 a client reads (the
 * envelope, `retry-after`, the `x-ratelimit-*` headers, the openai SDK's RateLimitError), the headers
 * on every admitted answer (both platforms, JSON and SSE), limits shared by a group's or a user's
 * keys, a token estimate that can never fit, and token limits that count what the upstream reports.
 * Time passing is tested on the service itself under TestClock (no test waits a minute).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import OpenAI from "openai"
import type { RateLimited, StoreError } from "../../src/domain/errors.js"
import type { Principal } from "../../src/domain/model.js"
import { makeRateLimits } from "../../src/services/rateLimits/core.js"
import { makeMemoryBuckets } from "../../src/services/rateLimits/inProcess.js"
import { type Admission, unlimited } from "../../src/services/rateLimits/RateLimits.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"
import { testPrincipal } from "../support/principal.js"
import { type Answer, call, expectEnvelope, postResponses, readEvents, sleep, waitFor } from "./helpers.js"

const OA_KEY = "sk-test-openai-0001"
const AN_KEY = "sk-test-anthropic-0001"
const OA2_KEY = "sk-test-openai-0002"
const BOB_KEY = "sk-test-openai-bob-0001"

type Fields = Record<string, unknown>

/**
 * fakeUpstreamConfig with limits laid over its groups (`oa`, `an`), its user (`alice`) and its keys
 * (`oa-key`, `an-key`), plus a second key of alice's in `oa` (`oa-key-2`) and a key of another
 * user in `oa` (`bob-key`).
 */
const limitedConfig = (
  upstreamUrl: string,
  limits: { groups?: Record<string, Fields>; users?: Record<string, Fields>; keys?: Record<string, Fields> } = {}
) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    groups: base.groups.map((g) => ({ ...g, ...limits.groups?.[g.name] })),
    users: [...base.users, { name: "bob", balance_usd: 50, concurrency: 4 }].map((u) => ({ ...u, ...limits.users?.[u.name] })),
    keys: [
      ...base.keys,
      { key: OA2_KEY, user: "alice", group: "oa", name: "oa-key-2" },
      { key: BOB_KEY, user: "bob", group: "oa", name: "bob-key" }
    ].map((k) => ({ ...k, ...limits.keys?.[k.name] }))
  }
}

/** A Go duration (`20ms`, `1.5s`, `1m0s`, `1h0m0s`) in milliseconds. */
const durationMs = (text: string | null): number => {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s|(\d+)ms)$/.exec(text ?? "")
  if (m === null) throw new Error(`not a Go duration: ${String(text)}`)
  return (Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0)) * 1000 + Number(m[4] ?? 0)
}

const rateLimitHeaderNames = (headers: Headers): Array<string> => {
  const names: Array<string> = []
  headers.forEach((_value, name) => {
    if (name.startsWith("x-ratelimit-")) names.push(name)
  })
  return names.sort()
}

const REQUEST_HEADERS = ["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"]
const TOKEN_HEADERS = ["x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]

const ask = (gw: TestGateway, key: string, input = "hi", model = "gpt-5.4", extra: Fields = {}) =>
  postResponses(gw.url, key, { model, input, ...extra })

const expectRefused = (res: Answer, code: "requests_per_minute_exceeded" | "tokens_per_minute_exceeded") => {
  const error = expectEnvelope(res, { status: 429, type: "rate_limit_error", code })
  const retryAfter = Number(res.headers.get("retry-after"))
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  return { error, retryAfter }
}

const streamAsk = (gw: TestGateway, key: string, model: string) =>
  fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "stream please", stream: true })
  })

describe("per-minute rate limits over HTTP", () => {
  let upstream: FakeUpstream
  beforeAll(async () => {
    upstream = await startFakeUpstream()
  })
  afterAll(() => upstream.close())

  /** A gateway on the fake upstream with these limits, closed after `use`. */
  const withGateway = async (
    limits: Parameters<typeof limitedConfig>[1],
    use: (gw: TestGateway) => Promise<void>
  ): Promise<void> => {
    const gw = await startGateway({ config: limitedConfig(upstream.url, limits), env: fakeUpstreamEnv })
    try {
      await use(gw)
    } finally {
      await gw.close()
    }
  }

  it("key rpm_limit 2: the openai SDK gets two answers (headers in the raw response), then a RateLimitError", async () => {
    await withGateway({ keys: { "oa-key": { rpm_limit: 2 } } }, async (gw) => {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OA_KEY, maxRetries: 0 })
      const first = await client.responses.create({ model: "gpt-5.4", input: "one" }).withResponse()
      expect(first.data.status).toBe("completed")
      expect(first.response.headers.get("x-ratelimit-limit-requests")).toBe("2")
      expect(first.response.headers.get("x-ratelimit-remaining-requests")).toBe("1")
      const second = await client.responses.create({ model: "gpt-5.4", input: "two" }).withResponse()
      expect(second.response.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      // No token limit: no token headers.
      expect(rateLimitHeaderNames(second.response.headers)).toEqual([...REQUEST_HEADERS].sort())

      const upstreamBefore = upstream.requests.length
      const error = await client.responses.create({ model: "gpt-5.4", input: "three" }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      const refused = error as InstanceType<typeof OpenAI.RateLimitError>
      expect(refused.status).toBe(429)
      expect(refused.code).toBe("requests_per_minute_exceeded")
      expect(refused.type).toBe("rate_limit_error")
      expect(refused.message).toMatch(/this API key.*2 requests per minute/)
      // Full at 2 per minute: one request's room drains in 30 s (less the little time the test took).
      const retryAfter = Number(refused.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(25)
      expect(retryAfter).toBeLessThanOrEqual(30)
      expect(refused.headers.get("x-ratelimit-limit-requests")).toBe("2")
      expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      expect(durationMs(refused.headers.get("x-ratelimit-reset-requests"))).toBeGreaterThan(55_000)
      // A refused request never reaches the upstream.
      expect(upstream.requests.length).toBe(upstreamBefore)

      // Over plain HTTP: the envelope exactly, and still refused (a refusal is not charged, but the
      // bucket has not drained yet).
      const again = await ask(gw, OA_KEY)
      expectRefused(again, "requests_per_minute_exceeded")
      expect(again.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      // Another key (of the same user and group) is not limited by this key's limit.
      expect((await ask(gw, OA2_KEY)).status).toBe(200)
    })
  })

  it("the headers count down on each admitted answer (limit 3: remaining 2, 1, 0) and the reset grows", async () => {
    await withGateway({ keys: { "oa-key": { rpm_limit: 3 } } }, async (gw) => {
      const seen: Array<{ remaining: string | null; reset: number }> = []
      for (let i = 0; i < 3; i++) {
        const res = await ask(gw, OA_KEY)
        expect(res.status).toBe(200)
        expect(res.headers.get("x-ratelimit-limit-requests")).toBe("3")
        seen.push({
          remaining: res.headers.get("x-ratelimit-remaining-requests"),
          reset: durationMs(res.headers.get("x-ratelimit-reset-requests"))
        })
      }
      expect(seen.map((s) => s.remaining)).toEqual(["2", "1", "0"])
      // Each request is 20 s of drain at 3 per minute: about 20 s, 40 s, 60 s until empty.
      seen.forEach((s, i) => {
        expect(s.reset).toBeGreaterThan((i + 1) * 20_000 - 2_000)
        expect(s.reset).toBeLessThanOrEqual((i + 1) * 20_000)
      })
      expectRefused(await ask(gw, OA_KEY), "requests_per_minute_exceeded")
    })
  })

  it("a group's limit is shared by the group's keys, and no other group's", async () => {
    await withGateway({ groups: { oa: { rpm_limit: 3 } } }, async (gw) => {
      const answers = [await ask(gw, OA_KEY), await ask(gw, OA2_KEY), await ask(gw, BOB_KEY)]
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
      expect(answers.map((a) => a.headers.get("x-ratelimit-remaining-requests"))).toEqual(["2", "1", "0"])
      for (const key of [OA_KEY, OA2_KEY, BOB_KEY]) {
        const refused = await ask(gw, key)
        const { error } = expectRefused(refused, "requests_per_minute_exceeded")
        expect(error.message).toMatch(/this key's group.*3 requests per minute/)
      }
      // The other group has no limit: answered, and without rate-limit headers.
      const other = await ask(gw, AN_KEY, "hi", "claude-sonnet-4-6")
      expect(other.status).toBe(200)
      expect(rateLimitHeaderNames(other.headers)).toEqual([])
    })
  })

  it("a user's limit counts the user's keys across groups and platforms, not another user's", async () => {
    await withGateway({ users: { alice: { rpm_limit: 2 } } }, async (gw) => {
      expect((await ask(gw, OA_KEY)).status).toBe(200)
      const anthropic = await ask(gw, AN_KEY, "hi", "claude-sonnet-4-6")
      expect(anthropic.status).toBe(200)
      expect(anthropic.headers.get("x-ratelimit-remaining-requests")).toBe("0")
      const { error } = expectRefused(await ask(gw, OA2_KEY), "requests_per_minute_exceeded")
      expect(error.message).toMatch(/this key's user/)
      expectRefused(await ask(gw, AN_KEY, "hi", "claude-sonnet-4-6"), "requests_per_minute_exceeded")
      // bob is another user of the same group.
      const bob = await ask(gw, BOB_KEY)
      expect(bob.status).toBe(200)
      expect(rateLimitHeaderNames(bob.headers)).toEqual([])
    })
  })

  it("the tightest limit of each kind is the one reported", async () => {
    await withGateway(
      { keys: { "oa-key": { rpm_limit: 100, tpm_limit: 100_000 } }, users: { alice: { rpm_limit: 5 } }, groups: { oa: { tpm_limit: 1_000 } } },
      async (gw) => {
        const res = await ask(gw, OA_KEY, "x".repeat(400)) // about 100 tokens
        expect(res.status).toBe(200)
        expect(res.headers.get("x-ratelimit-limit-requests")).toBe("5")
        expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("4")
        expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("1000")
        expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("900")
      }
    )
  })

  it("tpm_limit: a request whose text alone is over the limit is refused, charges nothing, and says why", async () => {
    await withGateway({ keys: { "oa-key": { rpm_limit: 2, tpm_limit: 100 } } }, async (gw) => {
      const upstreamBefore = upstream.requests.length
      // 404 characters: about 101 tokens, more than the 100 a minute the key may use.
      const refused = await ask(gw, OA_KEY, "y".repeat(404))
      const { error, retryAfter } = expectRefused(refused, "tokens_per_minute_exceeded")
      expect(error.message).toMatch(/about 101 tokens.*100 tokens per minute/)
      expect(retryAfter).toBe(60)
      expect(upstream.requests.length).toBe(upstreamBefore)
      // Nothing was charged, neither tokens nor the request: the key's two requests are still there.
      const first = await ask(gw, OA_KEY, "z".repeat(40)) // 10 tokens
      expect(first.status).toBe(200)
      expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("1")
      expect(first.headers.get("x-ratelimit-remaining-tokens")).toBe("90")
      expect(first.headers.get("x-ratelimit-limit-tokens")).toBe("100")
      expect(rateLimitHeaderNames(first.headers)).toEqual([...REQUEST_HEADERS, ...TOKEN_HEADERS].sort())
    })
  })

  it("a request that can never fit says so (x-should-retry: false): the openai SDK with its default retries gives up at once", async () => {
    await withGateway({ keys: { "oa-key": { tpm_limit: 100 } } }, async (gw) => {
      const tooBig = await ask(gw, OA_KEY, "y".repeat(404))
      expectRefused(tooBig, "tokens_per_minute_exceeded")
      expect(tooBig.headers.get("x-should-retry")).toBe("false")
      // A request that merely has to wait may be retried.
      expect((await ask(gw, OA_KEY, "y".repeat(320))).status).toBe(200) // 80 tokens
      const wait = await ask(gw, OA_KEY, "y".repeat(160)) // 40 more: over for now
      expectRefused(wait, "tokens_per_minute_exceeded")
      expect(wait.headers.get("x-should-retry")).toBeNull()

      // Default retries (2): without the header the SDK would wait retry-after (60 s) twice.
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OA_KEY })
      const started = Date.now()
      const error = await client.responses.create({ model: "gpt-5.4", input: "y".repeat(404) }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe("tokens_per_minute_exceeded")
      expect(Date.now() - started).toBeLessThan(5_000)
    })
  }, 30_000)

  it("tpm_limit counts what the upstream reports, not the estimate: a small text with large real usage uses the minute up", async () => {
    await withGateway({ keys: { "oa-key": { tpm_limit: 300 } } }, async (gw) => {
      // Two characters of text (an estimate of 1 token), but an image the estimate leaves out and
      // the fake upstream counts as input: it reports several hundred tokens.
      const image = { type: "input_image", image_url: `data:image/png;base64,${"A".repeat(2_000)}` }
      const first = await ask(gw, OA_KEY, "Hi", "gpt-5.4", {
        input: [{ role: "user", content: [{ type: "input_text", text: "Hi" }, image] }]
      })
      expect(first.status).toBe(200)
      expect(first.headers.get("x-ratelimit-remaining-tokens")).toBe("299")
      const usage = (first.json as { usage: { total_tokens: number } }).usage
      expect(usage.total_tokens).toBeGreaterThan(450)

      // The settlement runs once the answer is out: wait for the quota's (the limits' follows it).
      await waitFor(async () => {
        const res = await call(gw.url, "/v1/usage", { key: OA_KEY })
        return (res.json as { usage: { total: { requests: number } } }).usage.total.requests === 1
      })
      await sleep(50)

      const second = await ask(gw, OA_KEY, "Hi")
      const { retryAfter } = expectRefused(second, "tokens_per_minute_exceeded")
      expect(second.headers.get("x-ratelimit-remaining-tokens")).toBe("0")
      // The wait is what the real usage takes to drain below the limit (300 tokens a minute).
      const expected = ((usage.total_tokens + 1 - 300) * 60) / 300
      expect(retryAfter).toBeGreaterThanOrEqual(Math.floor(expected) - 2)
      expect(retryAfter).toBeLessThanOrEqual(Math.ceil(expected))
      expect(durationMs(second.headers.get("x-ratelimit-reset-tokens"))).toBeGreaterThan((usage.total_tokens - 10) * 200)
    })
  })

  it("no limit anywhere: no x-ratelimit-* headers, JSON or stream", async () => {
    await withGateway({}, async (gw) => {
      const res = await ask(gw, OA_KEY)
      expect(res.status).toBe(200)
      expect(rateLimitHeaderNames(res.headers)).toEqual([])
      const stream = await streamAsk(gw, AN_KEY, "claude-sonnet-4-6")
      expect(stream.status).toBe(200)
      expect(rateLimitHeaderNames(stream.headers)).toEqual([])
      await readEvents(stream)
    })
  })

  it("both platforms carry the headers, JSON and SSE, counting on one shared user limit", async () => {
    await withGateway({ users: { alice: { rpm_limit: 10, tpm_limit: 10_000 } } }, async (gw) => {
      const remaining: Array<string | null> = []
      const check = (headers: Headers) => {
        expect(rateLimitHeaderNames(headers)).toEqual([...REQUEST_HEADERS, ...TOKEN_HEADERS].sort())
        expect(headers.get("x-ratelimit-limit-requests")).toBe("10")
        expect(headers.get("x-ratelimit-limit-tokens")).toBe("10000")
        expect(durationMs(headers.get("x-ratelimit-reset-tokens"))).toBeGreaterThan(0)
        remaining.push(headers.get("x-ratelimit-remaining-requests"))
      }

      const openaiJson = await ask(gw, OA_KEY)
      expect(openaiJson.status).toBe(200)
      check(openaiJson.headers)

      const openaiStream = await streamAsk(gw, OA_KEY, "gpt-5.4")
      expect(openaiStream.status).toBe(200)
      expect(openaiStream.headers.get("content-type")).toMatch(/^text\/event-stream/)
      check(openaiStream.headers)
      const openaiEvents = await readEvents(openaiStream)
      expect(openaiEvents.error).toBeUndefined()
      expect(openaiEvents.events.at(-1)?.["type"]).toBe("response.completed")

      const anthropicJson = await ask(gw, AN_KEY, "hi", "claude-sonnet-4-6")
      expect(anthropicJson.status).toBe(200)
      check(anthropicJson.headers)

      const anthropicStream = await streamAsk(gw, AN_KEY, "claude-sonnet-4-6")
      expect(anthropicStream.status).toBe(200)
      expect(anthropicStream.headers.get("content-type")).toMatch(/^text\/event-stream/)
      check(anthropicStream.headers)
      const anthropicEvents = await readEvents(anthropicStream)
      expect(anthropicEvents.error).toBeUndefined()
      expect(anthropicEvents.events.at(-1)?.["type"]).toBe("response.completed")

      expect(remaining).toEqual(["9", "8", "7", "6"])
    })
  })

  it("an admitted request whose upstream fails still carries the headers, and its token estimate is given back", async () => {
    await withGateway({ keys: { "oa-key": { tpm_limit: 100 } } }, async (gw) => {
      upstream.setFaults([{ _tag: "Status", status: 400 }])
      const failed = await ask(gw, OA_KEY, "f".repeat(240)) // 60 tokens
      expect(failed.status).toBe(400)
      expect(failed.headers.get("x-ratelimit-remaining-tokens")).toBe("40")
      // The failure is settled with no tokens used: 60 more fit again (they would not if the 60
      // estimated for the failed request were still charged).
      await sleep(50)
      const next = await ask(gw, OA_KEY, "g".repeat(240))
      expect(next.status).toBe(200)
      expect(Number(next.headers.get("x-ratelimit-remaining-tokens"))).toBeGreaterThanOrEqual(40)
    })
  })
})

describe("per-minute limits over time (the service on the in-process store, under TestClock)", () => {
  const limited = (key: Fields = {}, user: Fields = {}, group: Fields = {}): Principal => {
    const p = testPrincipal()
    return { key: { ...p.key, ...key }, user: { ...p.user, ...user }, group: { ...p.group, ...group } }
  }

  /** The refusal of an admission that must be refused by a limit (anything else fails the test). */
  const refusedBy = (admission: Effect.Effect<Admission, RateLimited | StoreError>) =>
    Effect.flatMap(Effect.flip(admission), (e) => (e._tag === "RateLimited" ? Effect.succeed(e) : Effect.die(e)))

  it.effect("a full request bucket admits again once one request's room has drained, not a millisecond before", () =>
    Effect.gen(function*() {
      const limits = makeRateLimits(makeMemoryBuckets())
      const p = limited({ rpmLimit: 2 })
      yield* limits.admit(p, () => 0)
      yield* limits.admit(p, () => 0)
      const refused = yield* refusedBy(limits.admit(p, () => 0))
      expect(refused).toMatchObject({ _tag: "RateLimited", code: "requests_per_minute_exceeded", retryAfterSeconds: 30 })
      yield* TestClock.adjust("29999 millis")
      expect((yield* refusedBy(limits.admit(p, () => 0))).retryAfterSeconds).toBe(1)
      yield* TestClock.adjust("1 millis")
      const admitted = yield* limits.admit(p, () => 0)
      expect(admitted.headers["x-ratelimit-remaining-requests"]).toBe("0")
      expect(admitted.headers["x-ratelimit-reset-requests"]).toBe("1m0s")
      // A whole minute later everything has drained: full room again.
      yield* TestClock.adjust("1 minute")
      expect((yield* limits.admit(p, () => 0)).headers["x-ratelimit-remaining-requests"]).toBe("1")
    }))

  it.effect("tokens drain continuously: half the limit frees up in half a minute", () =>
    Effect.gen(function*() {
      const limits = makeRateLimits(makeMemoryBuckets())
      const p = limited({ tpmLimit: 100 })
      const full = yield* limits.admit(p, () => 100)
      expect(full.headers).toEqual({ "x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1m0s" })
      const refused = yield* refusedBy(limits.admit(p, () => 50))
      expect(refused).toMatchObject({ code: "tokens_per_minute_exceeded", retryAfterSeconds: 30 })
      yield* TestClock.adjust("30 seconds")
      const half = yield* limits.admit(p, () => 50)
      expect(half.headers["x-ratelimit-remaining-tokens"]).toBe("0")
      expect((yield* refusedBy(limits.admit(p, () => 1))).code).toBe("tokens_per_minute_exceeded")
    }))

  it.effect("settle replaces the estimate with the real use, once: less gives room back, more takes it", () =>
    Effect.gen(function*() {
      const limits = makeRateLimits(makeMemoryBuckets())
      const p = limited({ tpmLimit: 100 })
      const a = yield* limits.admit(p, () => 80)
      expect(a.headers["x-ratelimit-remaining-tokens"]).toBe("20")
      expect((yield* refusedBy(limits.admit(p, () => 30))).code).toBe("tokens_per_minute_exceeded")
      yield* a.settle(10)
      yield* a.settle(0) // a second settlement changes nothing
      const b = yield* limits.admit(p, () => 30)
      expect(b.headers["x-ratelimit-remaining-tokens"]).toBe("60")
      yield* b.settle(90) // the upstream reported more than estimated
      const refused = yield* refusedBy(limits.admit(p, () => 1))
      expect(refused.code).toBe("tokens_per_minute_exceeded")
      // 100 used: 1 over the limit with the next token, 0.6 s to drain.
      expect(refused.retryAfterSeconds).toBe(1)
      expect(refused.headers?.["x-ratelimit-remaining-tokens"]).toBe("0")
    }))

  it.effect("a refusal by one limit charges none: the group's token limit refuses, the key's requests stay free", () =>
    Effect.gen(function*() {
      const limits = makeRateLimits(makeMemoryBuckets())
      const p = limited({ rpmLimit: 5 }, {}, { tpmLimit: 10 })
      const refused = yield* refusedBy(limits.admit(p, () => 20))
      expect(refused).toMatchObject({ code: "tokens_per_minute_exceeded", retryAfterSeconds: 60 })
      expect(refused.message).toMatch(/about 20 tokens.*this key's group/)
      const admitted = yield* limits.admit(p, () => 5)
      expect(admitted.headers["x-ratelimit-remaining-requests"]).toBe("4")
      expect(admitted.headers["x-ratelimit-remaining-tokens"]).toBe("5")
    }))

  it.effect("no limit: the estimate is never computed and nothing is charged", () =>
    Effect.gen(function*() {
      const limits = makeRateLimits(makeMemoryBuckets())
      let estimated = 0
      const admitted = yield* limits.admit(limited(), () => ++estimated)
      expect(admitted).toBe(unlimited)
      expect(admitted.headers).toEqual({})
      // A request limit alone does not need the token estimate either.
      yield* limits.admit(limited({ rpmLimit: 3 }), () => ++estimated)
      expect(estimated).toBe(0)
    }))
})
