/**
 * The admin API on a PostgreSQL that stalls while settlements wait to be written (issue 32, item
 * 7): an admin read waits for the settlements accepted before it, then runs its own statement, and
 * each wait was bounded by the store timeout (STORE_TIMEOUT_MS) on its own, or not at all: behind
 * a backlog of settlement batches, each retried against the stalled database, an admin call took
 * many store timeouts. The call as a whole is bounded: a list and a write answer 503
 * `store_unavailable` while the database still stalls, and the write is not applied afterwards.
 *
 * Judged by order, not by a clock: the stall is held for ten store timeouts (the backlog alone
 * holds the writer for some thirty), and the admin answers must come while it holds.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { sleep } from "../http/helpers.js"
import { ADMIN_TOKEN, type GatewayWithAdmin, respond, startWithAdmin } from "../support/adminGateway.js"
import type { StallProxy } from "../support/stallProxy.js"
import { describeOnPostgres, type StallablePostgres, startStallablePostgres } from "./stallablePostgres.js"

const KEY = "sk-admin-config-key-0001"
const STORE_TIMEOUT_MS = 300
// Before anything reads the configuration: Effect's environment provider is built on first use.
const previousTimeout = process.env["STORE_TIMEOUT_MS"]
process.env["STORE_TIMEOUT_MS"] = String(STORE_TIMEOUT_MS)
/** How long the stall holds for the admin calls to answer. */
const HOLD_MS = 10 * STORE_TIMEOUT_MS
/** Settlements waiting, one batch each, when the admin calls come. */
const BACKLOG = 6

interface Answer {
  readonly status: number
  readonly code: string | undefined
}

const admin = async (gw: GatewayWithAdmin, path: string, body?: unknown): Promise<Answer> => {
  const res = await fetch(`${gw.admin}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  let code: string | undefined
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code
  } catch {
    code = undefined
  }
  return { status: res.status, code }
}

const balanceOf = async (gw: GatewayWithAdmin, user: string): Promise<number | undefined> => {
  const res = await fetch(`${gw.admin}/admin/users/${user}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  if (res.status !== 200) return undefined
  return ((await res.json()) as { balance_usd: number }).balance_usd
}

const stalledSuite = () => {
  let pg: StallablePostgres
  let proxy: StallProxy
  let gw: GatewayWithAdmin

  beforeAll(async () => {
    pg = await startStallablePostgres()
    proxy = pg.proxy
    // The key and its figures stay cached through the stall, so requests are served and their
    // settlements queue; one settlement per batch makes the backlog as long as a busy gateway's.
    gw = await startWithAdmin({ target: pg.target, store: { cacheTtlMillis: 600_000, maxBatch: 1 } })
  })
  afterAll(async () => {
    if (previousTimeout === undefined) delete process.env["STORE_TIMEOUT_MS"]
    else process.env["STORE_TIMEOUT_MS"] = previousTimeout
    proxy?.resume()
    await gw?.close().catch(() => undefined)
    await pg?.close()
  })

  it("behind settlements waiting on the stalled database, an admin list and a write answer 503 store_unavailable while it stalls", async () => {
    expect(await respond(gw.gateway, KEY)).toBe(200)
    const before = await balanceOf(gw, "erin")
    expect(before).toBeDefined()

    proxy.stall()
    for (let i = 0; i < BACKLOG; i++) expect(await respond(gw.gateway, KEY)).toBe(200)
    const answers = Promise.all([admin(gw, "/admin/users"), admin(gw, "/admin/users/erin/topup", { amount_usd: 1 })])
    const first = await Promise.race([answers.then(() => "answered" as const), sleep(HOLD_MS).then(() => "stall released" as const)])
    proxy.resume()
    expect(first).toBe("answered")
    for (const answer of await answers) expect(answer).toEqual({ status: 503, code: "store_unavailable" })

    // Once the database answers again, so does the admin API; the top-up it refused was not
    // applied behind its answer (the balance only went down, by what the requests cost).
    let after: number | undefined
    for (let attempt = 0; attempt < 20 && after === undefined; attempt++) {
      after = await balanceOf(gw, "erin")
      if (after === undefined) await sleep(STORE_TIMEOUT_MS)
    }
    expect(after).toBeDefined()
    expect(after).toBeLessThanOrEqual(before!)
  }, 60_000)
}

await describeOnPostgres("the admin API on a PostgreSQL that stalls", stalledSuite)
