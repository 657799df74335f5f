/**
 * Account scheduling for Responses WebSocket turns (issue 19, item 4), with two accounts of equal
 * priority on two fake upstreams (A and B), so that requests without a session alternate between
 * them (least recently used first):
 * - a connection sticks to one account for all its turns, even full creates with different prompts
 *   (the gateway gives each connection a session id);
 * - a session id the client sent on the handshake is the connection's (two connections naming the
 *   same session share the account);
 * - the sticky account failing before anything was sent fails over to the other account within
 *   the same turn, and the connection then stays on the account that served;
 * - an expanded conversation larger than MAX_BODY_BYTES is refused like an HTTP body that large
 *   (error event 413), and drops the chain.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { postResponses } from "../http/helpers.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { OA_KEY, responseOf, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

let A: FakeUpstream
let B: FakeUpstream

const config = () => ({
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 50, concurrency: 8 }],
  keys: [{ key: OA_KEY, user: "alice", group: "oa", name: "oa-key" }],
  accounts: [
    { name: "acct-a", platform: "openai", base_url: `${A.url}/v1`, api_key_env: "FAKE_OPENAI_KEY", groups: ["oa"] },
    { name: "acct-b", platform: "openai", base_url: `${B.url}/v1`, api_key_env: "FAKE_OPENAI_KEY", groups: ["oa"] }
  ]
})

const counts = () => ({ a: A.requests.length, b: B.requests.length })
const diff = (before: { a: number; b: number }) => ({ a: A.requests.length - before.a, b: B.requests.length - before.b })

let asked = 0
const model = "gpt-5.4"

describe("scheduling WebSocket turns", () => {
  let gw: WsGateway
  beforeAll(async () => {
    A = await startFakeUpstream()
    B = await startFakeUpstream()
    gw = await startWsGateway({ config, settings: { maxBodyBytes: 32 * 1024 } })
  })
  afterAll(async () => {
    await gw.close()
    await A.close()
    await B.close()
  })

  it("without a session, HTTP requests alternate between the two accounts (the baseline)", async () => {
    const before = counts()
    for (let i = 0; i < 6; i++) {
      expect((await postResponses(gw.url, OA_KEY, { model, input: `http question ${++asked}` })).status).toBe(200)
    }
    expect(diff(before)).toEqual({ a: 3, b: 3 })
  })

  it("a connection's turns all go to one account, full creates with new prompts included", async () => {
    const client = await WsClient.withKey(gw, OA_KEY)
    try {
      const before = counts()
      for (let i = 0; i < 6; i++) {
        const events = await client.turn({ model, input: `ws question ${++asked}` })
        expect(events.at(-1)?.type).toBe("response.completed")
      }
      const d = diff(before)
      expect([d.a, d.b].sort()).toEqual([0, 6])
    } finally {
      await client.close()
    }
  })

  it("a session_id sent on the handshake is the connection's: two connections naming it share the account", async () => {
    const first = await WsClient.withKey(gw, OA_KEY, "/v1/responses", { session_id: "codex-session-1" })
    const second = await WsClient.withKey(gw, OA_KEY, "/v1/responses", { session_id: "codex-session-1" })
    try {
      const before = counts()
      for (let i = 0; i < 3; i++) {
        expect((await first.turn({ model, input: `first ${++asked}` })).at(-1)?.type).toBe("response.completed")
        expect((await second.turn({ model, input: `second ${++asked}` })).at(-1)?.type).toBe("response.completed")
      }
      const d = diff(before)
      expect([d.a, d.b].sort()).toEqual([0, 6])
    } finally {
      await first.close()
      await second.close()
    }
  })

  it("the sticky account failing before any event fails over within the turn; the connection follows the account that served", async () => {
    const client = await WsClient.withKey(gw, OA_KEY)
    try {
      const before = counts()
      const one = await client.turn({ model, input: `sticky ${++asked}` })
      expect(one.at(-1)?.type).toBe("response.completed")
      const sticky = diff(before).a === 1 ? A : B
      const other = sticky === A ? B : A
      sticky.setFaults([{ _tag: "Status", status: 500 }])
      const stickyBefore = sticky.requests.length
      const otherBefore = other.requests.length
      const failedOver = await client.turn({ model, input: [], previous_response_id: responseOf(one.at(-1)).id })
      expect(failedOver.at(-1)?.type).toBe("response.completed")
      expect(failedOver.filter((e) => e.type === "response.created")).toHaveLength(1)
      expect(sticky.requests.length - stickyBefore).toBe(1)
      expect(other.requests.length - otherBefore).toBe(1)
      // The expanded conversation went to the account that served.
      expect(JSON.stringify(other.requests.at(-1)?.body)).toContain(`sticky ${asked}`)
      for (let i = 0; i < 3; i++) {
        expect((await client.turn({ model, input: `after ${++asked}` })).at(-1)?.type).toBe("response.completed")
      }
      expect(sticky.requests.length - stickyBefore).toBe(1)
      expect(other.requests.length - otherBefore).toBe(4)
    } finally {
      await client.close()
    }
  })

  it("an expanded conversation over MAX_BODY_BYTES is an error event 413, and drops the chain", async () => {
    const client = await WsClient.withKey(gw, OA_KEY)
    try {
      const big = "lorem ipsum ".repeat(1_700) // ~20 KB: fits alone, not twice
      const first = await client.turn({ model, input: big })
      expect(first.at(-1)?.type).toBe("response.completed")
      const firstId = responseOf(first.at(-1)).id
      const before = counts()
      const tooBig = await client.turn({ model, input: big, previous_response_id: firstId })
      expect(tooBig).toHaveLength(1)
      expect(tooBig[0]).toMatchObject({ type: "error", status: 413, error: { type: "invalid_request_error", code: "request_too_large" } })
      expect(diff(before)).toEqual({ a: 0, b: 0 })
      const after = await client.turn({ model, input: "short", previous_response_id: firstId })
      expect(after[0]).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
    } finally {
      await client.close()
    }
  })
})
