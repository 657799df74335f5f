/**
 * Every Responses WebSocket turn is a request (issue 19, item 4), on both platforms: the key's
 * rpm_limit counts WebSocket turns and HTTP requests together and refuses a turn with an error
 * event 429 requests_per_minute_exceeded carrying the rate-limit headers; tpm_limit, balance and
 * the group's model list refuse a turn with the HTTP status and code in an error event; a refused turn leaves
 * the connection usable and is no usage; completed turns are counted in /v1/usage exactly as their
 * response.completed events report them.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call, postResponses } from "../http/helpers.js"
import { fakeUpstreamConfig } from "../support/gateway.js"
import { type Frame, PLATFORMS, responseOf, startWsGateway, usageTotals, WsClient, type WsGateway } from "./helpers.js"

const keyFor = (platform: string, what: string) => `sk-test-${what}-${platform}-0001`
const groupOf = (platform: string) => (platform === "openai" ? "oa" : "an")

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    users: [...base.users, { name: "broke", balance_usd: 0, concurrency: 4 }],
    keys: [
      ...base.keys,
      ...PLATFORMS.flatMap(({ platform }) => [
        { key: keyFor(platform, "rpm"), user: "alice", group: groupOf(platform), name: `${platform}-rpm`, rpm_limit: 2 },
        { key: keyFor(platform, "mixed"), user: "alice", group: groupOf(platform), name: `${platform}-mixed`, rpm_limit: 2 },
        { key: keyFor(platform, "tpm"), user: "alice", group: groupOf(platform), name: `${platform}-tpm`, tpm_limit: 50 },
        { key: keyFor(platform, "broke"), user: "broke", group: groupOf(platform), name: `${platform}-broke` },
        { key: keyFor(platform, "usage"), user: "alice", group: groupOf(platform), name: `${platform}-usage` },
        { key: keyFor(platform, "model"), user: "alice", group: groupOf(platform), name: `${platform}-model` }
      ])
    ]
  }
}

const expectRefusedTurn = (events: ReadonlyArray<Frame>, status: number, type: string, code: string): Frame => {
  expect(events).toHaveLength(1)
  const event = events[0]!
  expect(event).toMatchObject({ type: "error", status, error: { type, code } })
  expect(Object.keys(event["error"] as object).sort()).toEqual(["code", "message", "param", "type"])
  return event
}

describe("every WebSocket turn is a request", () => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ config })
  })
  afterAll(() => gw.close())

  // The `oa` group lists its models (the `an` group lists none: any model goes to its upstream).
  it("a model outside the group's list: an error event 404 model_not_found (param model)", async () => {
    const client = await WsClient.withKey(gw, keyFor("openai", "model"))
    try {
      const refused = expectRefusedTurn(await client.turn({ model: "no-such-model", input: "hi" }), 404, "invalid_request_error", "model_not_found")
      expect((refused["error"] as { param: unknown }).param).toBe("model")
    } finally {
      await client.close()
    }
  })

  for (const { platform, model } of PLATFORMS) {
    describe(`${platform} group`, () => {
      it("rpm_limit 2: two turns, then an error event 429 requests_per_minute_exceeded; the connection stays usable", async () => {
        const key = keyFor(platform, "rpm")
        const client = await WsClient.withKey(gw, key)
        try {
          for (const input of ["one", "two"]) {
            const events = await client.turn({ model, input })
            expect(events.at(-1)?.type).toBe("response.completed")
          }
          const upstreamBefore = gw.upstream.requests.length
          const refused = expectRefusedTurn(
            await client.turn({ model, input: "three" }),
            429,
            "rate_limit_error",
            "requests_per_minute_exceeded"
          )
          // Codex reads rate-limit headers from the event's `headers` (§5.1).
          const headers = refused["headers"] as Record<string, string>
          expect(Number(headers["retry-after"])).toBeGreaterThanOrEqual(1)
          expect(headers["x-ratelimit-limit-requests"]).toBe("2")
          expect(headers["x-ratelimit-remaining-requests"]).toBe("0")
          expect(gw.upstream.requests.length).toBe(upstreamBefore)
          // Over HTTP the key is refused as well: one limit for both transports.
          const http = await postResponses(gw.url, key, { model, input: "four" })
          expect(http.status).toBe(429)
          // Still open; a warm-up counts against rpm_limit too (issue 26, item 5) and is refused alike.
          const warm = await client.turn({ model, input: "warm", generate: false })
          expectRefusedTurn(warm, 429, "rate_limit_error", "requests_per_minute_exceeded")
          expect(client.closeInfo).toBeUndefined()
          // Only the two answered turns are usage.
          expect((await usageTotals(gw.url, key)).requests).toBe(2)
        } finally {
          await client.close()
        }
      })

      it("rpm_limit counts HTTP requests and WebSocket turns together", async () => {
        const key = keyFor(platform, "mixed")
        expect((await postResponses(gw.url, key, { model, input: "over http" })).status).toBe(200)
        const client = await WsClient.withKey(gw, key)
        try {
          expect((await client.turn({ model, input: "over ws" })).at(-1)?.type).toBe("response.completed")
          expectRefusedTurn(await client.turn({ model, input: "one too many" }), 429, "rate_limit_error", "requests_per_minute_exceeded")
        } finally {
          await client.close()
        }
      })

      it("tpm_limit: a turn bigger than the limit is an error event 429 tokens_per_minute_exceeded", async () => {
        const key = keyFor(platform, "tpm")
        const client = await WsClient.withKey(gw, key)
        try {
          expectRefusedTurn(
            await client.turn({ model, input: "a long question ".repeat(100) }),
            429,
            "rate_limit_error",
            "tokens_per_minute_exceeded"
          )
          expect((await client.turn({ model, input: "short" })).at(-1)?.type).toBe("response.completed")
        } finally {
          await client.close()
        }
      })

      it("no balance: an error event 402 insufficient_balance", async () => {
        const client = await WsClient.withKey(gw, keyFor(platform, "broke"))
        try {
          expectRefusedTurn(await client.turn({ model, input: "hi" }), 402, "insufficient_quota", "insufficient_balance")
          expectRefusedTurn(await client.turn({ model, input: "hi again" }), 402, "insufficient_quota", "insufficient_balance")
        } finally {
          await client.close()
        }
      })

      it("completed turns are in /v1/usage as their response.completed reported them", async () => {
        const key = keyFor(platform, "usage")
        const before = await usageTotals(gw.url, key)
        const client = await WsClient.withKey(gw, key)
        const reported = { requests: 0, input_tokens: 0, output_tokens: 0 }
        try {
          let previous: string | undefined
          for (const input of ["count me", "and me, please, with a few more words", "me too"]) {
            const events = await client.turn({ model, input, ...(previous === undefined ? {} : { previous_response_id: previous }) })
            const completed = responseOf(events.at(-1))
            const usage = completed["usage"] as { input_tokens: number; output_tokens: number }
            reported.requests++
            reported.input_tokens += usage.input_tokens
            reported.output_tokens += usage.output_tokens
            previous = completed.id
          }
        } finally {
          await client.close()
        }
        const after = await usageTotals(gw.url, key)
        expect({
          requests: after.requests - before.requests,
          input_tokens: after.input_tokens - before.input_tokens,
          output_tokens: after.output_tokens - before.output_tokens
        }).toEqual(reported)
        expect(after.cost).toBeGreaterThan(before.cost)
        const body = (await call(gw.url, "/v1/usage", { key })).json as { model_stats: Array<{ model: string; requests: number }> }
        expect(body.model_stats.find((m) => m.model === model)?.requests).toBe(after.requests)
      })
    })
  }
})

describe("moderation and the image gate on WebSocket turns", () => {
  const BLOCK = { openai: "sk-test-block-oa-0001", anthropic: "sk-test-block-an-0001" } as const
  const moderated = (upstreamUrl: string) => {
    const base = fakeUpstreamConfig(upstreamUrl)
    return {
      ...base,
      groups: [...base.groups, { name: "oa-block", platform: "openai", moderation: "block" }, { name: "an-block", platform: "anthropic", moderation: "block" }],
      keys: [
        ...base.keys,
        { key: BLOCK.openai, user: "alice", group: "oa-block", name: "oa-block" },
        { key: BLOCK.anthropic, user: "alice", group: "an-block", name: "an-block" }
      ],
      accounts: base.accounts.map((a) => ({ ...a, groups: [...a.groups, a.platform === "openai" ? "oa-block" : "an-block"] })),
      moderation: { rules: { weapons: ["build a bomb"] } }
    }
  }
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ config: moderated })
  })
  afterAll(() => gw.close())

  for (const { platform, model } of PLATFORMS) {
    it(`${platform}: flagged text in a continuation's new items is refused (403 content_policy_violation) before any upstream call`, async () => {
      const client = await WsClient.withKey(gw, BLOCK[platform])
      try {
        const first = await client.turn({ model, input: "a harmless question" })
        expect(first.at(-1)?.type).toBe("response.completed")
        const before = gw.upstream.requests.length
        const flagged = await client.turn({
          model,
          input: [{ role: "user", content: [{ type: "input_text", text: "now tell me how to build a bomb" }] }],
          previous_response_id: responseOf(first.at(-1)).id
        })
        const event = expectRefusedTurn(flagged, 403, "permission_error", "content_policy_violation")
        expect(String((event["error"] as { message: string }).message).toLowerCase()).not.toContain("bomb")
        expect(gw.upstream.requests.length).toBe(before)
        const ok = await client.turn({ model, input: "something else" })
        expect(ok.at(-1)?.type).toBe("response.completed")
      } finally {
        await client.close()
      }
    })

    it(`${platform}: image generation in a group without it is refused (403 image_generation_not_allowed)`, async () => {
      const client = await WsClient.withKey(gw, platform === "openai" ? PLATFORMS[0].key : PLATFORMS[1].key)
      try {
        const tools = platform === "openai" ? [{ type: "image_generation" }] : [{ type: "custom", name: "image_gen" }]
        expectRefusedTurn(await client.turn({ model, input: "a cat", tools }), 403, "permission_error", "image_generation_not_allowed")
      } finally {
        await client.close()
      }
    })
  }
})
