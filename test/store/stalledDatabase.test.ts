/**
 * A PostgreSQL that accepts connections but never answers (issue 26, item 2), over real sockets:
 * a gateway and its admin API on a database reached through a TCP proxy (test/support/stallProxy.ts)
 * that is told to stall. Public requests, /v1/usage and the admin API then answer 503
 * `store_unavailable` once the store timeout (STORE_TIMEOUT_MS, 1 s here) has passed, where they
 * used to hang for as long as the client would wait; and they serve again by themselves once the
 * database answers again, without a restart.
 *
 * SQLite is not tested here: it is a file in the gateway's own process, with no connection that
 * can stall (a full disk or a lock held by another process fails at once or after busy_timeout).
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { ADMIN_TOKEN, type GatewayWithAdmin, startWithAdmin } from "../support/adminGateway.js"
import type { StallProxy } from "../support/stallProxy.js"
import { describeOnPostgres, type StallablePostgres, startStallablePostgres } from "./stallablePostgres.js"

const KEY = "sk-admin-config-key-0001"
const STORE_TIMEOUT_MS = 1000
// Before anything reads the configuration: Effect's environment provider is built on first use.
const previousTimeout = process.env["STORE_TIMEOUT_MS"]
process.env["STORE_TIMEOUT_MS"] = String(STORE_TIMEOUT_MS)
/** How long the test's client waits for any one answer: far past the store timeout, far short of a hang. */
const CLIENT_PATIENCE_MS = 20_000

interface Answer {
  readonly status: number
  readonly code: string | undefined
  readonly millis: number
}

const ask = async (url: string, init: RequestInit = {}): Promise<Answer> => {
  const started = performance.now()
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(CLIENT_PATIENCE_MS) })
    const text = await res.text()
    let code: string | undefined
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code
    } catch {
      code = undefined
    }
    return { status: res.status, code, millis: Math.round(performance.now() - started) }
  } catch (e) {
    // The client gave up: the gateway never answered.
    return { status: 0, code: (e as Error).name, millis: Math.round(performance.now() - started) }
  }
}

const respond = (gw: GatewayWithAdmin, input: string, key = KEY) =>
  ask(`${gw.gateway}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-5.4", input })
  })
const usage = (gw: GatewayWithAdmin) => ask(`${gw.gateway}/v1/usage`, { headers: { authorization: `Bearer ${KEY}` } })
const adminUsers = (gw: GatewayWithAdmin) => ask(`${gw.admin}/admin/users`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
const topUp = (gw: GatewayWithAdmin) =>
  ask(`${gw.admin}/admin/users/erin/topup`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ amount_usd: 1 })
  })

const stalledSuite = () => {
  let pg: StallablePostgres
  let proxy: StallProxy
  let gw: GatewayWithAdmin

  beforeAll(async () => {
    pg = await startStallablePostgres()
    proxy = pg.proxy
    gw = await startWithAdmin({ target: pg.target })
  })
  afterAll(async () => {
    if (previousTimeout === undefined) delete process.env["STORE_TIMEOUT_MS"]
    else process.env["STORE_TIMEOUT_MS"] = previousTimeout
    await gw?.close().catch(() => undefined)
    await pg?.close()
  })

  it("while the database stalls, requests, /v1/usage and the admin API answer 503 store_unavailable; then serve again by themselves", async () => {
    // Served while the database answers: the pool holds open connections, which then stall.
    expect((await respond(gw, "before the stall")).status).toBe(200)
    expect((await usage(gw)).status).toBe(200)
    expect((await adminUsers(gw)).status).toBe(200)

    proxy.stall()
    // A key the gateway has not seen yet is looked up in the database (a known one is served from
    // the key cache, its settlement left to the store's own handling of an outage).
    const unseenKey = () => `sk-not-seen-yet-${Math.random().toString(36).slice(2)}`
    const stalled = await Promise.all([
      respond(gw, "during the stall", unseenKey()),
      usage(gw),
      adminUsers(gw),
      topUp(gw)
    ])
    console.info(`answers while the database stalls (status code ms): ${stalled.map((a) => `${a.status} ${a.code} ${a.millis}`).join("; ")}`)
    for (const answer of stalled) expect({ status: answer.status, code: answer.code }).toEqual({ status: 503, code: "store_unavailable" })
    // Still stalled, on connections opened during the stall, and more requests at once than the
    // pool has connections (10): each still gets the same answer rather than queueing for ever.
    const again = await Promise.all([
      respond(gw, "still stalled", unseenKey()),
      adminUsers(gw),
      ...Array.from({ length: 25 }, () => usage(gw))
    ])
    console.info(`answers again (status code ms): ${again.map((a) => `${a.status} ${a.code} ${a.millis}`).join("; ")}`)
    for (const answer of again) expect({ status: answer.status, code: answer.code }).toEqual({ status: 503, code: "store_unavailable" })

    proxy.resume()
    // No restart, no operator: the next requests find the database again (a few tries at most,
    // for a pool connection that the stall left behind).
    let recovered: Answer | undefined
    for (let attempt = 0; attempt < 5 && recovered?.status !== 200; attempt++) recovered = await respond(gw, "after the stall")
    expect(recovered?.status).toBe(200)
    expect((await usage(gw)).status).toBe(200)
    expect((await adminUsers(gw)).status).toBe(200)
    expect((await topUp(gw)).status).toBe(200)
  }, 4 * CLIENT_PATIENCE_MS)
}

await describeOnPostgres("a PostgreSQL that stalls", stalledSuite)
