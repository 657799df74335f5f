/**
 * What one request may do to a group's accounts, through a real gateway against fake upstreams:
 * - when a second account refuses the same request's credential (401), the request is answered
 *   (`upstream_auth_failed`) and failover stops: one request cools down at most one account, so no
 *   request (a header the upstream reads as a bad credential) can take a whole group offline;
 * - one 529 on a group's only account does not refuse the next requests for the overload cooldown
 *   (30 s by default) without asking: the next request reaches the account and is served.
 */
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type AccountHealth, Scheduler } from "../../src/services/scheduler/Scheduler.js"
import { expectEnvelope, postResponses } from "../http/helpers.js"
import { type FakeUpstream, type FakeUpstreamRequest, startFakeUpstream } from "../support/fakeUpstream.js"
import { type SchedulingGateway, startSchedulingGateway } from "./gatewayHarness.js"

const KEY = "sk-failover-limits-trio-01"
const SOLO_KEY = "sk-failover-limits-solo-01"
const SECRETS = { UP_A: "sk-upstream-trio-a", UP_B: "sk-upstream-trio-b", UP_C: "sk-upstream-trio-c", UP_S: "sk-upstream-solo" }

let upstream: FakeUpstream
let gw: SchedulingGateway | undefined

const config = (url: string) => ({
  groups: [{ name: "trio", platform: "openai" }, { name: "solo", platform: "openai" }],
  users: [{ name: "tess", balance_usd: 100, concurrency: 20 }],
  keys: [
    { key: KEY, user: "tess", group: "trio", name: "trio-key" },
    { key: SOLO_KEY, user: "tess", group: "solo", name: "solo-key" }
  ],
  accounts: [
    { name: "acct-a", platform: "openai", base_url: `${url}/v1`, api_key_env: "UP_A", groups: ["trio"], priority: 1 },
    { name: "acct-b", platform: "openai", base_url: `${url}/v1`, api_key_env: "UP_B", groups: ["trio"], priority: 2 },
    { name: "acct-c", platform: "openai", base_url: `${url}/v1`, api_key_env: "UP_C", groups: ["trio"], priority: 3 },
    { name: "only", platform: "openai", base_url: `${url}/v1`, api_key_env: "UP_S", groups: ["solo"] }
  ]
})

const start = async () => {
  gw = await startSchedulingGateway({ config: config(upstream.url), env: SECRETS })
  return gw
}

/** Which account sent each upstream request since `from`, by its key: "a", "b", "c" or "s". */
const askedSince = (from: number) =>
  upstream.requests.slice(from).map((r: FakeUpstreamRequest) => {
    const key = String(r.headers["authorization"] ?? "").replace(/^Bearer\s+/i, "")
    return key === SECRETS.UP_A ? "a" : key === SECRETS.UP_B ? "b" : key === SECRETS.UP_C ? "c" : key === SECRETS.UP_S ? "s" : "?"
  }).join("")

const health = async (g: SchedulingGateway): Promise<Record<string, AccountHealth>> =>
  Object.fromEntries((await g.run(Effect.flatMap(Scheduler, (s) => s.health))).map((h) => [h.account.name, h]))

let asked = 0
const ask = (g: SchedulingGateway, key = KEY) => postResponses(g.url, key, { model: "gpt-5.4", input: `limits ${++asked}` })

beforeAll(async () => {
  upstream = await startFakeUpstream()
})
afterEach(async () => {
  upstream.setFault(undefined)
  upstream.setFaults([])
  await gw?.close()
  gw = undefined
})
afterAll(() => upstream.close())

describe("a credential refused by a second account on one request", () => {
  it("stops failover after two attempts with upstream_auth_failed; only the first account cools down", async () => {
    const g = await start()
    upstream.setFault({ _tag: "Status", status: 401 })
    const from = upstream.requests.length
    const res = await ask(g)
    expectEnvelope(res, { status: 502, type: "upstream_error", code: "upstream_auth_failed" })
    expect(askedSince(from)).toBe("ab")
    const after = await health(g)
    expect(after["acct-a"]).toMatchObject({ takenOut: false, coolingDownReason: "auth_failed" })
    expect(after["acct-b"]).toMatchObject({ takenOut: false, coolingDownUntil: undefined })
    expect(after["acct-c"]).toMatchObject({ takenOut: false, coolingDownUntil: undefined })
  })

  it("two such requests cool down two accounts at most: the third still serves", async () => {
    const g = await start()
    upstream.setFault({ _tag: "Status", status: 401 })
    const from = upstream.requests.length
    for (let i = 0; i < 2; i++) expectEnvelope(await ask(g), { status: 502, type: "upstream_error", code: "upstream_auth_failed" })
    // A is cooling after the first: the second request starts at B and stops at C.
    expect(askedSince(from)).toBe("abbc")
    const after = await health(g)
    expect(after["acct-c"]).toMatchObject({ takenOut: false, coolingDownUntil: undefined })
    upstream.setFault(undefined)
    expect((await ask(g)).status).toBe(200)
    expect(askedSince(from).at(-1)).toBe("c")
  })
})

describe("one 529 on a group's only account", () => {
  it("the next request reaches the account and is served", async () => {
    const g = await start()
    upstream.setFaults([{ _tag: "Status", status: 529 }])
    const from = upstream.requests.length
    expectEnvelope(await ask(g, SOLO_KEY), { status: 502, type: "upstream_error", code: "upstream_overloaded" })
    const next = await ask(g, SOLO_KEY)
    expect(next.status).toBe(200)
    expect(askedSince(from)).toBe("ss")
  })
})
