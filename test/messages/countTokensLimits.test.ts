/**
 * count_tokens under the key's limits, over real sockets: it is counted by the key's `rpm_limit`
 * (both platforms; refused with the 429 the Messages door gives), a key has at most
 * COUNT_TOKENS_CONCURRENCY_PER_KEY local counts under way (a client that leaves gives its place
 * back), and hostile bodies counted in parallel do not stop the gateway answering `/health`.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { DOORS, messagesConfig, postMessages } from "../support/messagesGateway.js"
import { type MessagesUpstream, startMessagesUpstream } from "../support/messagesUpstream.js"

const PER_KEY = 2

const KEYS = {
  rpm: (p: string) => `sk-ct-rpm-${p}`,
  slots: "sk-ct-slots",
  other: "sk-ct-other",
  big: (i: number) => `sk-ct-big-${i}`
}

let upstream: MessagesUpstream
let gw: TestGateway
beforeAll(async () => {
  upstream = await startMessagesUpstream()
  const { config, env } = messagesConfig(upstream.url)
  const key = (k: string, group: string, extra: Record<string, unknown> = {}) => ({ key: k, user: "alice", group, name: k, ...extra })
  config.keys.push(
    ...DOORS.map((d) => key(KEYS.rpm(d.p), d.p, { rpm_limit: 2 })),
    key(KEYS.slots, "oa"),
    key(KEYS.other, "oa"),
    key(KEYS.big(0), "oa"),
    key(KEYS.big(1), "oa")
  )
  gw = await startGateway({ config, env, settings: { countTokensConcurrencyPerKey: PER_KEY } })
})
afterAll(async () => {
  await gw.close()
  await upstream.close()
})

interface AnthropicError {
  readonly type: string
  readonly error: { readonly type: string; readonly details: { readonly error_code: string } }
}

const small = (model: string) => ({ model, messages: [{ role: "user", content: "How many tokens is this?" }] })

const count = (key: string, body: unknown) => postMessages(gw, key, body, { path: "/v1/messages/count_tokens" })

describe.each(DOORS)("count_tokens under rpm_limit, $platform group", (door) => {
  it("rpm_limit 2: the third count_tokens gets the Messages door's 429 requests_per_minute_exceeded", async () => {
    const key = KEYS.rpm(door.p)
    for (let i = 0; i < 2; i++) {
      const ok = await count(key, small(door.model))
      expect(ok.status, await ok.clone().text()).toBe(200)
      expect(ok.headers.get("x-ratelimit-limit-requests")).toBe("2")
    }
    const refused = await count(key, small(door.model))
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    const body = (await refused.json()) as AnthropicError
    expect(body.type).toBe("error")
    expect(body.error.type).toBe("rate_limit_error")
    expect(body.error.details.error_code).toBe("requests_per_minute_exceeded")
    // The same refusal /v1/messages gives the key now: both doors share the one limit.
    const messages = await postMessages(gw, key, { ...small(door.model), max_tokens: 16 })
    expect(messages.status).toBe(429)
    expect(((await messages.json()) as AnthropicError).error.details.error_code).toBe("requests_per_minute_exceeded")
  })
})

/** A count_tokens request whose body is sent in part: it stays under way until `finish` or `leave`. */
const heldCount = (key: string, body: string) => {
  const bytes = Buffer.from(body)
  const url = new URL("/v1/messages/count_tokens", gw.url)
  let req: ClientRequest | undefined
  const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req = httpRequest(url, {
      method: "POST",
      agent: false,
      headers: {
        "x-api-key": key,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "content-length": String(bytes.length)
      }
    }, (res: IncomingMessage) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.write(bytes.subarray(0, bytes.length >> 1))
  })
  return {
    answered,
    finish: () => req!.end(bytes.subarray(bytes.length >> 1)),
    leave: () => req!.destroy()
  }
}

/** Sends `body` until the answer has `status` (the gateway learns of other requests in its own time). */
const countUntil = async (key: string, status: number): Promise<Response> => {
  for (let i = 0; i < 100; i++) {
    const res = await count(key, small("gpt-5.4"))
    if (res.status === status) return res
    await res.arrayBuffer()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`count_tokens never answered ${status}`)
}

describe("local counts under way per key (openai group)", () => {
  it(`at most ${PER_KEY} at once; one more is 429 too_many_concurrent_counts; a client that leaves gives its place back`, async () => {
    const body = JSON.stringify(small("gpt-5.4"))
    const held = Array.from({ length: PER_KEY }, () => heldCount(KEYS.slots, body))
    const left = held[0]!.answered.catch(() => undefined)

    const refused = await countUntil(KEYS.slots, 429)
    expect(refused.headers.get("retry-after")).toBe("1")
    const error = (await refused.json()) as AnthropicError
    expect(error.error.type).toBe("rate_limit_error")
    expect(error.error.details.error_code).toBe("too_many_concurrent_counts")
    // Per key: another key of the same group counts meanwhile.
    expect((await count(KEYS.other, small("gpt-5.4"))).status).toBe(200)

    held[0]!.leave()
    await left
    const after = await countUntil(KEYS.slots, 200)
    expect(((await after.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0)

    for (const h of held.slice(1)) h.finish()
    for (const h of held.slice(1)) {
      const { status, text } = await h.answered
      expect(status, text).toBe(200)
      expect((JSON.parse(text) as { input_tokens: number }).input_tokens).toBeGreaterThan(0)
    }
  })
})

/** Text the tokenizer finds hard: lowercase letters in a fixed pseudo-random order, no spaces. */
const hardText = (chars: number, seed: number): string => {
  let s = seed
  const out = new Array<string>(chars)
  for (let i = 0; i < chars; i++) {
    s = (s * 1103515245 + 12345) % 2147483648
    out[i] = String.fromCharCode(97 + (s % 26))
  }
  return out.join("")
}

/** About 4 MB: a hard run, a run of `'s`, a single-character run. */
const hostileBody = (seed: number): string =>
  JSON.stringify({
    model: "gpt-5.4",
    system: hardText(256 * 1024, seed),
    messages: [{ role: "user", content: [{ type: "text", text: "'s".repeat(1024 * 1024) }, { type: "text", text: "x".repeat(2 * 1024 * 1024) }] }]
  })

describe("/health while hostile bodies are counted", () => {
  it("four ~4 MB bodies counted in parallel: /health keeps answering before any count is answered", async () => {
    const bodies = [0, 1, 2, 3].map((i) => hostileBody(i + 1))
    const counts = bodies.map((body, i) => heldCount(KEYS.big(i % 2), body))
    // Every body sent whole before the first probe.
    await Promise.all(counts.map((c) => new Promise<void>((resolve) => c.finish().once("finish", resolve))))

    let answeredCounts = 0
    const results = counts.map((c) =>
      c.answered.then((answer) => {
        answeredCounts++
        return answer
      })
    )
    const all = Promise.all(results)
    let healthBeforeFirstCount = 0
    let done = false
    void all.finally(() => (done = true))
    while (!done) {
      const res = await fetch(`${gw.url}/health`)
      expect(res.status).toBe(200)
      await res.arrayBuffer()
      if (answeredCounts === 0) healthBeforeFirstCount++
    }
    for (const { status, text } of await all) {
      expect(status, text.slice(0, 300)).toBe(200)
      expect((JSON.parse(text) as { input_tokens: number }).input_tokens).toBeGreaterThan(1_000_000)
    }
    // Counting takes many slices with the event loop's turn between them: /health answers all along.
    expect(healthBeforeFirstCount).toBeGreaterThanOrEqual(10)
  }, 120_000)
})
