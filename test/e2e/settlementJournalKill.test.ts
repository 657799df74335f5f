/**
 * A settlement reaches the journal within the store timeout of its answer (issue 32, item 7), so a
 * gateway killed (SIGKILL) while its store does not answer loses nothing it answered. `npm start`
 * as a process, its store held: PostgreSQL behind a proxy that stalls, or a SQLite file another
 * connection holds the write lock of. Requests are answered from the caches meanwhile; the store
 * refuses their settlements only once its writer has tried each batch five times (about thirty
 * store timeouts here), so until then they lived only in memory. Now each is journaled once the
 * store timeout has passed without the store's confirmation.
 *
 * Judged by order: the gateway is killed once the journal holds every answered request, or six
 * store timeouts after the last answer, whichever comes first, with the store still held (the
 * writer alone would hold the later ones for about twelve). A new gateway, the store back, then
 * writes each of them exactly once.
 *
 * PostgreSQL is skipped with a warning when unreachable (DATABASE_TEST_URL), unless
 * MODELGATE_REQUIRE_SERVICES=1, where that fails.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, describe, expect, it } from "vitest"
import { sqlClientLayer } from "../../src/store/client.js"
import { cleanEnv, type Gateway, startGateway } from "../cli/processes.js"
import { sleep, waitFor } from "../http/helpers.js"
import { PG_URL, postgresReachable, requireServices } from "../store/harness.js"
import { startStallablePostgres } from "../store/stallablePostgres.js"

const KEY = "sk-journal-kill-0001"
const STORE_TIMEOUT_MS = 500
/** How long after the last answer the gateway is killed at the latest. */
const KILL_AFTER_MS = 6 * STORE_TIMEOUT_MS
const REQUESTS = 3

const config = {
  groups: [{ name: "oa", platform: "openai" }],
  users: [{ name: "alice", balance_usd: 100, concurrency: 10 }],
  keys: [{ key: KEY, user: "alice", group: "oa", name: "alice-key" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"], concurrency: 10 }]
}

/** Where the store is, how the test reads it directly, and how it holds and releases it. */
interface HeldStore {
  readonly url: string
  readonly rows: (text: string) => Promise<ReadonlyArray<Record<string, unknown>>>
  readonly hold: () => void
  readonly release: () => void
  readonly close: () => Promise<void>
}

const postgresStore = async (): Promise<HeldStore> => {
  const pg = await startStallablePostgres()
  const direct = ManagedRuntime.make(sqlClientLayer(pg.direct.target))
  return {
    url: pg.url,
    rows: (text) => direct.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(text))),
    hold: pg.proxy.stall,
    release: pg.proxy.resume,
    close: async () => {
      await direct.dispose()
      await pg.close()
    }
  }
}

const sqliteStore = (dir: string): HeldStore => {
  const file = join(dir, "modelgate.db")
  let db: DatabaseSync | undefined
  const open = () => (db ??= new DatabaseSync(file, { timeout: 5_000 }))
  return {
    url: `sqlite:${file}`,
    rows: async (text) => open().prepare(text).all() as ReadonlyArray<Record<string, unknown>>,
    // The write lock, as another process (an operator's sqlite3 shell, a backup) may hold it.
    hold: () => open().exec("BEGIN IMMEDIATE"),
    release: () => open().exec("COMMIT"),
    close: async () => db?.close()
  }
}

/** One Responses request: its status and request id. */
const ask = async (gw: Gateway, n: number) => {
  const res = await fetch(`${gw.base}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-5.4", input: `request ${n}` })
  })
  await res.text()
  return { status: res.status, id: res.headers.get("x-request-id") ?? "" }
}

/** The request ids the journal file holds now. */
const journaled = (path: string): Set<string> => {
  if (!existsSync(path)) return new Set()
  const ids = new Set<string>()
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line === "") continue
    try {
      ids.add((JSON.parse(line) as { requestId: string }).requestId)
    } catch {
      // A line being written: the next poll reads it whole.
    }
  }
  return ids
}

const killed = (gw: Gateway) =>
  new Promise<void>((resolve) => {
    if (gw.child.exitCode !== null || gw.child.signalCode !== null) return resolve()
    gw.child.once("exit", () => resolve())
    gw.child.kill("SIGKILL")
  })

const dir = mkdtempSync(join(tmpdir(), "modelgate-journal-kill-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const pgReachable = await postgresReachable()

const scenario = (name: string, open: (dir: string) => Promise<HeldStore> | HeldStore) => async () => {
  const here = join(dir, name)
  mkdirSync(here, { recursive: true })
  const store = await open(here)
  const journalPath = join(here, "settlements.journal")
  writeFileSync(join(here, "gateway.json"), JSON.stringify(config))
  const env = cleanEnv({
    DATABASE_URL: store.url,
    MODELGATE_CONFIG: join(here, "gateway.json"),
    SETTLEMENT_JOURNAL_PATH: journalPath,
    STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS),
    // The key and its figures stay cached while the store is held, so requests are answered.
    STORE_CACHE_TTL_MS: "600000",
    LOG_LEVEL: "Warn"
  })
  let gw: Gateway | undefined
  try {
    gw = await startGateway(here, env)
    const warm = await ask(gw, 0)
    expect(warm.status).toBe(200)
    await waitFor(async () => (await store.rows("SELECT request_id FROM usage_events")).length === 1, 10_000)

    store.hold()
    const ids: Array<string> = []
    for (let n = 1; n <= REQUESTS; n++) {
      const answer = await ask(gw, n)
      expect(answer.status).toBe(200)
      ids.push(answer.id)
    }
    // Killed with the store still held: once the journal holds every answer, or at the latest.
    const latest = Date.now() + KILL_AFTER_MS
    while (Date.now() < latest && !ids.every((id) => journaled(journalPath).has(id))) await sleep(20)
    await killed(gw)
    gw = undefined
    store.release()

    // A new gateway, the store back: what the killed one answered is written, each once.
    gw = await startGateway(here, env)
    const all = [warm.id, ...ids].sort()
    await waitFor(async () => (await store.rows("SELECT request_id FROM usage_events")).length >= all.length, 10_000)
      .catch(() => undefined)
    const events = await store.rows("SELECT request_id, cost_micros FROM usage_events ORDER BY request_id")
    expect(events.map((e) => e["request_id"])).toEqual(all)
    await waitFor(() => !existsSync(journalPath), 5_000)
    const charged = events.reduce((sum, e) => sum + Number(e["cost_micros"]), 0)
    const balance = Number((await store.rows("SELECT balance_micros FROM users WHERE name = 'alice'"))[0]?.["balance_micros"])
    expect(100_000_000 - balance).toBe(charged)
  } finally {
    if (gw !== undefined) await gw.stop()
    await store.close()
  }
}

describe("a gateway killed while its store does not answer", () => {
  it("on SQLite (the file's write lock held): what it answered is in the journal and written once by the next gateway", scenario("sqlite", sqliteStore), 120_000)

  it.runIf(pgReachable || requireServices)(
    "on PostgreSQL (stalled): what it answered is in the journal and written once by the next gateway",
    async () => {
      if (!pgReachable) expect.fail(`PostgreSQL is not reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`)
      await scenario("postgres", () => postgresStore())()
    },
    120_000
  )
})

if (!pgReachable && !requireServices) {
  console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping the PostgreSQL case of the journal-before-kill test (set DATABASE_TEST_URL)`)
}
