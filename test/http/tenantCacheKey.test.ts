/**
 * A client's own `prompt_cache_key` is namespaced by its tenant before it goes upstream: two users
 * whose keys share one OpenAI account and pick the same name must not share the account's prompt
 * cache (nor read each other's cache timing). Over real sockets: a recording proxy in front of the
 * fake upstream shows the bytes the upstream got. A body that names no key still goes as the
 * client's bytes (the session's key added in front), on the hot path.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { type RecordingProxy, startRecordingProxy } from "../support/recordingProxy.js"
import { postResponses } from "./helpers.js"

const KEY_ANN = "sk-tenant-cache-ann-0001"
const KEY_ANN_2 = "sk-tenant-cache-ann-0002"
const KEY_BEN = "sk-tenant-cache-ben-0001"
const SHARED = "team-cache-1"

const config = (upstream: string) => ({
  groups: [{ name: "oa", platform: "openai" }],
  users: [{ name: "ann", balance_usd: 10, concurrency: 4 }, { name: "ben", balance_usd: 10, concurrency: 4 }],
  keys: [
    { key: KEY_ANN, user: "ann", group: "oa", name: "ann-1" },
    { key: KEY_ANN_2, user: "ann", group: "oa", name: "ann-2" },
    { key: KEY_BEN, user: "ben", group: "oa", name: "ben-1" }
  ],
  accounts: [{ name: "shared", platform: "openai", base_url: `${upstream}/v1`, api_key_env: "UP_KEY", groups: ["oa"] }]
})

describe("a client's prompt_cache_key, namespaced per tenant", () => {
  let upstream: FakeUpstream
  let proxy: RecordingProxy
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    proxy = await startRecordingProxy(upstream.url)
    gw = await startGateway({ config: config(proxy.url), env: { UP_KEY: "sk-upstream-shared" } })
  })
  afterAll(async () => {
    await gw.close()
    await proxy.close()
    await upstream.close()
  })

  /** The body the upstream got for one request, as text. */
  const forwarded = async (key: string, body: string): Promise<string> => {
    const before = proxy.exchanges.length
    const res = await postResponses(gw.url, key, body)
    expect(res.status).toBe(200)
    const seen = proxy.exchanges.slice(before)
    expect(seen).toHaveLength(1)
    return seen[0]!.requestBody
  }
  const cacheKeyOf = (text: string): unknown => (JSON.parse(text) as Record<string, unknown>)["prompt_cache_key"]

  it("two users' keys sending the same name: the upstream sees two names, neither the client's", async () => {
    const body = JSON.stringify({ model: "gpt-5.4", input: "same prompt", prompt_cache_key: SHARED })
    const ann = cacheKeyOf(await forwarded(KEY_ANN, body))
    const ben = cacheKeyOf(await forwarded(KEY_BEN, body))
    expect(ann).toEqual(expect.any(String))
    expect(ben).toEqual(expect.any(String))
    expect(ann).not.toBe(ben)
    expect([ann, ben]).not.toContain(SHARED)
    // Stable per tenant: the same name again is the same cache, from either of one user's keys.
    expect(cacheKeyOf(await forwarded(KEY_ANN, body))).toBe(ann)
    expect(cacheKeyOf(await forwarded(KEY_ANN_2, body))).toBe(ann)
    // The rest of the body is the client's.
    const { prompt_cache_key: _key, ...rest } = JSON.parse(await forwarded(KEY_BEN, body)) as Record<string, unknown>
    expect(rest).toEqual({ model: "gpt-5.4", input: "same prompt" })
  })

  it("a body without a key goes as the client's bytes, the session's key in front", async () => {
    const raw = "{\"model\":\"gpt-5.4\",   \"input\":\"bytes as sent\" ,\"metadata\":{\"k\":\"v\"}}"
    const text = await forwarded(KEY_ANN, raw)
    const derived = cacheKeyOf(text)
    expect(derived).toMatch(/^mg-[\w-]{22}$/)
    expect(text).toBe(`{"prompt_cache_key":${JSON.stringify(derived)},${raw.slice(1)}`)
  })

  it("the Messages door on an openai group: the same body field or session from two users names two caches", async () => {
    const keys: Array<unknown> = []
    for (const key of [KEY_ANN, KEY_BEN]) {
      const before = proxy.exchanges.length
      const client = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, defaultHeaders: { "x-claude-code-session-id": SHARED } })
      await client.messages.create({
        model: "gpt-5.4",
        max_tokens: 64,
        messages: [{ role: "user", content: "same prompt" }],
        // Not Anthropic's, but a client may send it: it never reaches the upstream as it came.
        ...({ prompt_cache_key: SHARED } as Record<string, unknown>)
      })
      keys.push(cacheKeyOf(proxy.exchanges[before]!.requestBody))
    }
    expect(keys[0]).toEqual(expect.any(String))
    expect(keys[0]).not.toBe(keys[1])
    expect(keys).not.toContain(SHARED)
  })
})
