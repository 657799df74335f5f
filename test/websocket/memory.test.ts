/**
 * What a WebSocket client may hold on the gateway (issue 26, item 5): the transcript a connection
 * keeps is bounded (a warm-up with a 20 MB input is answered but not kept, so naming it is
 * previous_response_not_found), a key and a user may each hold only so many open connections (more
 * are a 429 envelope at the handshake, no upgrade), and warm-ups count against rpm_limit like turns.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { expectEnvelope, postResponses, rawAsAnswer } from "../http/helpers.js"
import { fakeUpstreamConfig } from "../support/gateway.js"
import { AN_KEY, OA_KEY, type Refused, responseOf, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

const RPM_KEY = "sk-test-warm-rpm-0001"
const BIG_KEY = "sk-test-warm-big-0001"
const PER_KEY = 2
const PER_USER = 3

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    users: [...base.users, { name: "bob", balance_usd: 10, concurrency: 4 }],
    keys: [
      ...base.keys,
      { key: RPM_KEY, user: "bob", group: "oa", name: "warm-rpm", rpm_limit: 2 },
      { key: BIG_KEY, user: "bob", group: "oa", name: "warm-big" }
    ]
  }
}

const PATIENCE_MS = 10_000
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const asAnswer = (r: Refused) => rawAsAnswer({ status: r.status, headers: r.headers, text: r.text, elapsedMs: 0 })

/** A handshake with `key`: the client, or the HTTP answer that refused it. */
const attempt = async (gw: WsGateway, key: string): Promise<WsClient | Refused> => {
  try {
    return await WsClient.withKey(gw, key)
  } catch (e) {
    const refused = (e as { refused?: Refused }).refused
    if (refused === undefined) throw e
    return refused
  }
}

describe("what a WebSocket client may hold", () => {
  let gw: WsGateway
  const open: Array<WsClient> = []
  beforeAll(async () => {
    gw = await startWsGateway({
      config,
      settings: { websocketMaxConnectionsPerKey: PER_KEY, websocketMaxConnectionsPerUser: PER_USER }
    })
  })
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close()))
    await gw.close()
  })

  it("a warm-up with a 20 MB input is answered but not kept: naming it is previous_response_not_found", async () => {
    const client = await WsClient.withKey(gw, BIG_KEY)
    try {
      const warm = await client.turn({ model: "gpt-5.4", input: "x".repeat(20 * 1024 * 1024), generate: false }, 30_000)
      expect(warm.map((e) => e.type)).toEqual(["response.created", "response.completed"])
      const id = responseOf(warm[1]).id
      const requestsBefore = gw.upstream.requests.length
      const next = await client.turn({ model: "gpt-5.4", input: "and now?", previous_response_id: id })
      expect(next).toHaveLength(1)
      expect(next[0]).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
      // Told why, and what to do instead.
      expect((next[0]?.["error"] as { message: string }).message).toMatch(/larger than a connection keeps.*full input/)
      expect(gw.upstream.requests.length).toBe(requestsBefore)
      // A small warm-up on the same connection is kept and chains.
      const small = await client.turn({ model: "gpt-5.4", input: "small", generate: false })
      const chained = await client.turn({ model: "gpt-5.4", input: [], previous_response_id: responseOf(small[1]).id })
      expect(chained.at(-1)?.type).toBe("response.completed")
    } finally {
      await client.close()
    }
  })

  it(`a key holds at most ${PER_KEY} connections, a user ${PER_USER}: more are a 429 at the handshake`, async () => {
    for (let i = 0; i < PER_KEY; i++) {
      const client = await attempt(gw, OA_KEY)
      expect(client).toBeInstanceOf(WsClient)
      open.push(client as WsClient)
    }
    const overKey = await attempt(gw, OA_KEY)
    expect(overKey).not.toBeInstanceOf(WsClient)
    const keyAnswer = expectEnvelope(asAnswer(overKey as Refused), {
      status: 429,
      type: "rate_limit_error",
      code: "too_many_websocket_connections"
    })
    expect(JSON.stringify(keyAnswer)).toContain(`${PER_KEY}`)

    // The user's other key: one more fits under the user's cap, the next does not.
    const third = await attempt(gw, AN_KEY)
    expect(third).toBeInstanceOf(WsClient)
    open.push(third as WsClient)
    const overUser = await attempt(gw, AN_KEY)
    expect(overUser).not.toBeInstanceOf(WsClient)
    expectEnvelope(asAnswer(overUser as Refused), { status: 429, type: "rate_limit_error", code: "too_many_websocket_connections" })

    // The open connections still serve turns; HTTP is not capped.
    expect((await (open[0] as WsClient).turn({ model: "gpt-5.4", input: "hi" })).at(-1)?.type).toBe("response.completed")
    expect((await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: "hi" })).status).toBe(200)

    // A closed connection gives its place back.
    await open.shift()?.close()
    const deadline = Date.now() + PATIENCE_MS
    let again: WsClient | Refused = await attempt(gw, OA_KEY)
    while (!(again instanceof WsClient) && Date.now() < deadline) {
      await sleep(50)
      again = await attempt(gw, OA_KEY)
    }
    expect(again).toBeInstanceOf(WsClient)
    open.push(again as WsClient)
  })

  it("warm-ups count against rpm_limit: the third in a minute is an error event 429; the connection stays", async () => {
    const client = await WsClient.withKey(gw, RPM_KEY)
    try {
      for (const input of ["one", "two"]) {
        const warm = await client.turn({ model: "gpt-5.4", input, generate: false })
        expect(warm.map((e) => e.type)).toEqual(["response.created", "response.completed"])
      }
      const refused = await client.turn({ model: "gpt-5.4", input: "three", generate: false })
      expect(refused).toHaveLength(1)
      expect(refused[0]).toMatchObject({
        type: "error",
        status: 429,
        error: { type: "rate_limit_error", code: "requests_per_minute_exceeded" }
      })
      const headers = refused[0]?.["headers"] as Record<string, string>
      expect(headers["x-ratelimit-limit-requests"]).toBe("2")
      // One limit for both transports: HTTP is refused too.
      expect((await postResponses(gw.url, RPM_KEY, { model: "gpt-5.4", input: "four" })).status).toBe(429)
      expect(client.closeInfo).toBeUndefined()
    } finally {
      await client.close()
    }
  })
})
