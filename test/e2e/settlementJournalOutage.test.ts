/**
 * No usage lost while the database is away (issue 26, item 3): a real gateway on PostgreSQL behind
 * a TCP proxy, a mixed load (JSON and SSE, an OpenAI and an Anthropic group) against the fake
 * upstream, and the proxy taken away mid-load. Settlements the store cannot take go to the journal
 * (its depth in /readyz's detail and in /metrics); the gateway is stopped with the journal holding
 * them and a new one started, which writes them; a second outage is healed without a restart.
 * Then the usage rows add up to exactly what the clients were answered, each request once, and
 * the balance, the key quotas and the daily rollups moved by exactly the rows' cost.
 *
 * Skipped with a warning when PostgreSQL is not reachable (DATABASE_TEST_URL), unless
 * MODELGATE_REQUIRE_SERVICES=1, where that fails.
 */
import { assertOpenResponses, bodyIssues, eventIssues } from "../support/openResponses.js"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, describe, expect, it } from "vitest"
import * as JournalFile from "../../src/services/journal/file.js"
import * as ReadinessLive from "../../src/services/readiness/live.js"
import { sqlClientLayer } from "../../src/store/client.js"
import { sqlServices } from "../../src/store/Database.js"
import * as QuotaSqlJournaled from "../../src/store/quotaSqlJournaled.js"
import { parseDatabaseUrl } from "../../src/store/target.js"
import { call, sleep, waitFor } from "../http/helpers.js"
import { PG_URL, postgresBackend, postgresReachable, requireServices, type TestDatabase } from "../store/harness.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"
import { tcpProxy, type TcpProxy } from "../support/tcpProxy.js"

const OA = "sk-journal-openai-0001"
const AN = "sk-journal-anthropic-01"

const configFor = (upstreamUrl: string) => ({
  groups: [
    { name: "oa", platform: "openai", models: ["gpt-5.4"] },
    { name: "an", platform: "anthropic" }
  ],
  users: [{ name: "alice", balance_usd: 1000, concurrency: 200 }],
  keys: [
    { key: OA, user: "alice", group: "oa", name: "oa-key" },
    { key: AN, user: "alice", group: "an", name: "an-key" }
  ],
  accounts: [
    { name: "fake-openai", platform: "openai", base_url: `${upstreamUrl}/v1`, api_key_env: "FAKE_OPENAI_KEY", groups: ["oa"], concurrency: 200 },
    { name: "fake-anthropic", platform: "anthropic", base_url: upstreamUrl, api_key_env: "FAKE_ANTHROPIC_KEY", groups: ["an"], concurrency: 200 }
  ]
})

interface Answered {
  readonly key: string
  readonly input: number
  readonly output: number
}

/** A Responses request; the usage the client was answered (JSON `usage`, SSE `response.completed`), or none. */
const ask = async (gw: TestGateway, key: string, stream: boolean, n: number): Promise<Answered | undefined> => {
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: key === OA ? "gpt-5.4" : "claude-sonnet-4-5",
      input: `Request ${n}: say something about the number ${n}. `.repeat(1 + (n % 5)),
      stream
    })
  })
  const text = await res.text()
  if (res.status !== 200) return undefined
  let usage: { input_tokens: number; output_tokens: number } | undefined
  if (!stream) {
    assertOpenResponses(bodyIssues(JSON.parse(text)), "the body")
    usage = (JSON.parse(text) as { usage?: typeof usage }).usage
  } else {
    for (const block of text.split("\n\n")) {
      const data = block.split("\n").find((l) => l.startsWith("data: "))
      if (data !== undefined) assertOpenResponses(eventIssues(JSON.parse(data.slice(6))), "an event")
      if (!block.includes("event: response.completed") || data === undefined) continue
      usage = (JSON.parse(data.slice(6)) as { response: { usage?: typeof usage } }).response.usage
    }
  }
  if (usage === undefined) throw new Error(`an answer without usage: ${text.slice(0, 300)}`)
  return { key, input: usage.input_tokens, output: usage.output_tokens }
}

const reachable = await postgresReachable()

const dir = mkdtempSync(join(tmpdir(), "modelgate-journal-e2e-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("settlements across a PostgreSQL outage", () => {
  it.runIf(reachable || requireServices)(
    "are journaled while it is away and written once, across a restart and without one: usage rows equal the answers",
    async () => {
      if (!reachable) expect.fail(`PostgreSQL is not reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`)
      const backend = postgresBackend()
      const db: TestDatabase = await backend.fresh()
      const pg = new URL(PG_URL)
      const proxy: TcpProxy = await tcpProxy(pg.hostname, Number(pg.port === "" ? "5432" : pg.port))
      const viaProxy = new URL(db.url)
      viaProxy.hostname = "127.0.0.1"
      viaProxy.port = String(proxy.port)
      const target = parseDatabaseUrl(viaProxy.toString())
      if (target._tag === "Failure") throw new Error(target.failure)
      const upstream: FakeUpstream = await startFakeUpstream()
      // The test's own view of the database, not through the proxy.
      const direct = ManagedRuntime.make(sqlClientLayer(db.target))
      const query = (text: string) =>
        direct.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(text)))
      const num = (v: unknown) => Number(v ?? 0)
      const journalPath = join(dir, "pg", "settlements.journal")

      const start = () => {
        // Keys and balances stay cached through the outage, so requests are served and settled meanwhile.
        const sql = sqlServices(target.success, { reportOrphans: false, cacheTtlMillis: 600_000 })
        const journal = JournalFile.layer(journalPath)
        return startGateway({
          config: configFor(upstream.url),
          env: fakeUpstreamEnv,
          services: {
            keyRepo: sql.keyRepo,
            quota: QuotaSqlJournaled.layer({ retryMillis: 100, maxRetryMillis: 400 }).pipe(
              Layer.provide(sql.store),
              Layer.provide(journal)
            ),
            readiness: ReadinessLive.layerDatabaseJournaled().pipe(Layer.provide(sql.store), Layer.provide(journal))
          }
        })
      }
      const answered: Array<Answered> = []
      let n = 0
      /** `count` requests, alternating key and JSON/SSE; the answered ones are recorded. */
      const load = (gw: TestGateway, count: number) =>
        Promise.all(Array.from({ length: count }, () => {
          const i = n++
          return ask(gw, i % 2 === 0 ? OA : AN, i % 4 >= 2, i).then((a) => {
            if (a !== undefined) answered.push(a)
            return a
          })
        }))
      const settledRows = async () => num((await query("SELECT COUNT(*) AS n FROM usage_events"))[0]?.["n"])
      const detail = async (gw: TestGateway) => {
        const res = await call(gw.url, "/readyz")
        return { status: res.status, depth: (res.json as { detail?: { settlement_journal?: { depth: number } } }).detail?.settlement_journal?.depth }
      }

      /**
       * Takes the database away while requests are in flight (held at the upstream so they settle
       * after it went) and keeps the load going for `outageMs`; resolves once every answer is in.
       */
      const outage = async (gw: TestGateway, outageMs: number) => {
        upstream.setFaults(Array.from({ length: 8 }, () => ({ _tag: "HangBeforeHeaders" as const, ms: 400 })))
        const inFlight = load(gw, 8)
        await sleep(150)
        await proxy.close()
        const during: Array<Promise<unknown>> = [inFlight]
        const until = Date.now() + outageMs
        while (Date.now() < until) {
          during.push(load(gw, 4))
          await sleep(250)
        }
        await Promise.all(during)
      }

      try {
        const gw1 = await start()
        try {
          await load(gw1, 8)
          expect(answered).toHaveLength(8)
          await waitFor(async () => (await settledRows()) === 8, 10_000)
          expect(await detail(gw1)).toEqual({ status: 200, depth: 0 })

          await outage(gw1, 5_000)
          const served = answered.length
          // Every settlement is either in the store (it made it before the cut) or in the journal.
          let depth = 0
          await waitFor(async () => {
            depth = (await detail(gw1)).depth ?? -1
            return depth + (await settledRows()) === served
          }, 15_000)
          expect(depth).toBeGreaterThan(0)
          const ready = await detail(gw1)
          expect(ready).toEqual({ status: 503, depth })
          const metrics = await call(gw1.url, "/metrics")
          expect(metrics.text).toMatch(new RegExp(`^modelgate_settlement_journal_depth ${depth}$`, "m"))
        } finally {
          // Stopped with the journal holding what the store never got.
          await gw1.close()
        }
        const journaled = readFileSync(journalPath, "utf8").trim().split("\n")
        expect(journaled.length).toBeGreaterThan(0)
        expect(journaled.length + (await settledRows())).toBe(answered.length)

        await proxy.reopen()
        const gw2 = await start()
        try {
          // The new gateway writes what the old one journaled.
          await waitFor(async () => (await settledRows()) === answered.length, 15_000)
          await waitFor(async () => (await detail(gw2)).depth === 0, 5_000)
          expect(existsSync(journalPath)).toBe(false)

          // A second outage, healed while the gateway runs.
          await load(gw2, 4)
          await outage(gw2, 3_000)
          await waitFor(async () => ((await detail(gw2)).depth ?? 0) > 0, 10_000)
          await proxy.reopen()
          await waitFor(async () => (await settledRows()) === answered.length, 15_000)
          await waitFor(async () => (await detail(gw2)).depth === 0, 5_000)
          expect(existsSync(journalPath)).toBe(false)

          // What each key's own report says: its answers, summed.
          for (const key of [OA, AN]) {
            const mine = answered.filter((a) => a.key === key)
            const usage = await call(gw2.url, "/v1/usage", { key })
            expect((usage.json as { usage: { total: unknown } }).usage.total).toMatchObject({
              requests: mine.length,
              input_tokens: mine.reduce((s, a) => s + a.input, 0),
              output_tokens: mine.reduce((s, a) => s + a.output, 0)
            })
          }
        } finally {
          await gw2.close()
        }

        // The rows are the answers, each request once.
        const events = (await query(
          "SELECT COUNT(*) AS n, COUNT(DISTINCT request_id) AS ids, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cost_micros) AS cost FROM usage_events"
        ))[0]!
        expect({ n: num(events["n"]), ids: num(events["ids"]), input: num(events["input"]), output: num(events["output"]) }).toEqual({
          n: answered.length,
          ids: answered.length,
          input: answered.reduce((s, a) => s + a.input, 0),
          output: answered.reduce((s, a) => s + a.output, 0)
        })
        const cost = num(events["cost"])
        expect(cost).toBeGreaterThan(0)
        // Nothing charged twice: every figure a settlement moves moved by exactly the rows.
        const rollup = (await query(
          "SELECT SUM(requests) AS n, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cost_micros) AS cost FROM usage_daily"
        ))[0]!
        expect([num(rollup["n"]), num(rollup["input"]), num(rollup["output"]), num(rollup["cost"])]).toEqual([
          num(events["n"]),
          num(events["input"]),
          num(events["output"]),
          cost
        ])
        const balance = num((await query("SELECT balance_micros FROM users WHERE name = 'alice'"))[0]?.["balance_micros"])
        expect(1_000_000_000 - balance).toBe(cost)
        const quotaUsed = num((await query("SELECT SUM(quota_used_micros) AS used FROM api_keys"))[0]?.["used"])
        expect(quotaUsed).toBe(cost)
        expect(await query("SELECT request_id FROM usage_open")).toEqual([])
      } finally {
        await proxy.close()
        await upstream.close()
        await direct.dispose()
        await backend.cleanup()
      }
    },
    120_000
  )
})

if (!reachable && !requireServices) {
  console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping the settlement journal outage test (set DATABASE_TEST_URL)`)
}
