/**
 * GET /readyz through real HTTP (issue 18): ready on SQLite; not ready while draining (shutdown
 * begun), when the database stops answering (a SQLite connection closed under the gateway; a
 * PostgreSQL behind a proxy that hangs, then goes away, then comes back), and when Redis does
 * (a private redis-server stopped and started again). /health stays 200 throughout.
 * The PostgreSQL and Redis cases are skipped with a warning when those are unreachable, unless
 * MODELGATE_REQUIRE_SERVICES=1 (CI), where that is a failure.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AccessLog } from "../../src/observability/accessLog.js"
import { Lifecycle } from "../../src/services/lifecycle/Lifecycle.js"
import * as ReadinessLive from "../../src/services/readiness/live.js"
import { sqlClientLayer } from "../../src/store/client.js"
import { sqlServices } from "../../src/store/Database.js"
import { parseDatabaseUrl, sqliteTarget } from "../../src/store/target.js"
import { privateRedis, REDIS_URL, redisReachable, redisServerAvailable } from "../scheduler/redisHarness.js"
import { PG_URL, postgresBackend, postgresReachable, requireServices } from "../store/harness.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { tcpProxy } from "../support/tcpProxy.js"
import { call, expectEnvelope, waitFor } from "./helpers.js"

const KEY = "sk-readyz-key-00001"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 10 }],
  keys: [{ key: KEY, user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

const dir = mkdtempSync(join(tmpdir(), "modelgate-readyz-"))
let files = 0
const sqliteFile = () => join(dir, `r${++files}.db`)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A gateway on the SQL store (as `npm start` composes it), its readiness on that store's SqlClient and `redisUrl`. */
const gatewayOnSql = (target = sqliteTarget(sqliteFile()), redisUrl?: string, accessLog?: Array<string>) => {
  const sql = sqlServices(target, { reportOrphans: false })
  return startGateway({
    config,
    services: {
      keyRepo: sql.keyRepo,
      quota: sql.quota,
      readiness: ReadinessLive.layerDatabase(redisUrl).pipe(Layer.provide(sql.store)),
      ...(accessLog === undefined ? {} : { accessLog: AccessLog.layerWriter((line) => accessLog.push(line)) })
    }
  })
}

const readyz = (gw: TestGateway) => call(gw.url, "/readyz")

/** Polls /readyz until its body is `expected` (a transition takes a probe or a reconnect). */
const readyzBecomes = async (gw: TestGateway, expected: unknown, timeoutMs = 8_000) => {
  let last: unknown
  try {
    await waitFor(async () => {
      last = (await readyz(gw)).json
      return JSON.stringify(last) === JSON.stringify(expected)
    }, timeoutMs)
  } catch {
    expect(last).toEqual(expected)
  }
}

describe("/readyz on SQLite", () => {
  let gw: TestGateway
  const lines: Array<string> = []
  beforeAll(async () => {
    gw = await gatewayOnSql(undefined, undefined, lines)
  })
  afterAll(() => gw.close())

  it("is 200 ready with the database checked, needs no key, and is not cached", async () => {
    const res = await readyz(gw)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "ready", checks: { database: "ok" } })
    expect(res.headers.get("content-type")).toMatch(/^application\/json/)
    expect(res.headers.get("cache-control")).toBe("no-store")
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("is routed like /health: a wrong method is a 405 naming GET, and each answer has its access-log line", async () => {
    const wrong = await call(gw.url, "/readyz", { method: "POST", body: {} })
    expectEnvelope(wrong, { status: 405, type: "invalid_request_error", code: "method_not_allowed", message: "Method POST is not allowed on /readyz; use GET" })
    const before = lines.length
    await readyz(gw)
    await waitFor(() => lines.length > before)
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ message: "request", annotations: { method: "GET", path: "/readyz", status: 200, code: "ok" } })
    // Counted under its own route label.
    const scrape = await call(gw.url, "/metrics")
    expect(scrape.text).toMatch(/modelgate_requests_total\{route="readyz",status="200",code="ok"\} [1-9]/)
  })

  // Last in this block: shutdown cannot be undone.
  it("is 503 draining once shutdown has begun, while /health stays 200", async () => {
    await gw.runtime.runPromise(Lifecycle.use((l) => l.beginShutdown(30)))
    const res = await readyz(gw)
    expect(res.status).toBe(503)
    expect(res.json).toEqual({ status: "not_ready", reason: "draining", checks: { database: "ok" } })
    expect(res.headers.get("cache-control")).toBe("no-store")
    const health = await call(gw.url, "/health")
    expect(health.status).toBe(200)
    expect(health.json).toEqual({ status: "ok" })
  })
})

describe("/readyz with no database (the in-memory services)", () => {
  it("is ready with nothing to check, and 503 draining after shutdown begins", async () => {
    const gw = await startGateway({ config })
    try {
      expect((await readyz(gw)).json).toEqual({ status: "ready", checks: {} })
      await gw.runtime.runPromise(Lifecycle.use((l) => l.beginShutdown(30)))
      const res = await readyz(gw)
      expect(res.status).toBe(503)
      expect(res.json).toEqual({ status: "not_ready", reason: "draining", checks: {} })
    } finally {
      await gw.close()
    }
  })
})

describe("/readyz when the database goes away", () => {
  it("SQLite: a closed connection is 503 database unreachable; /health stays 200", async () => {
    // The gateway's SqlClient, in a scope this test closes (closing the node:sqlite database).
    const scope = await Effect.runPromise(Scope.make())
    const client = await Effect.runPromise(Layer.buildWithScope(sqlClientLayer(sqliteTarget(sqliteFile())), scope))
    const gw = await startGateway({
      config,
      services: { readiness: ReadinessLive.layerDatabase().pipe(Layer.provide(Layer.succeedContext(client))) }
    })
    try {
      expect((await readyz(gw)).status).toBe(200)
      await Effect.runPromise(Scope.close(scope, Exit.void))
      const res = await readyz(gw)
      expect(res.status).toBe(503)
      expect(res.json).toEqual({ status: "not_ready", reason: "database unreachable", checks: { database: "unreachable" } })
      expect((await call(gw.url, "/health")).status).toBe(200)
    } finally {
      await gw.close()
    }
  })

  describe("PostgreSQL behind a proxy", () => {
    let reachable = false
    beforeAll(async () => {
      reachable = await postgresReachable()
      if (!reachable && !requireServices) {
        console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping the /readyz PostgreSQL test (set DATABASE_TEST_URL)`)
      }
    })

    it("hangs: 503 timed out within the probe's second; goes away: 503 unreachable; comes back: 200", async (ctx) => {
      if (!reachable) {
        if (requireServices) expect.fail(`PostgreSQL is not reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`)
        ctx.skip()
      }
      const backend = postgresBackend()
      const db = await backend.fresh()
      const pg = new URL(PG_URL)
      const proxy = await tcpProxy(pg.hostname, Number(pg.port === "" ? "5432" : pg.port))
      const viaProxy = new URL(db.url)
      viaProxy.hostname = "127.0.0.1"
      viaProxy.port = String(proxy.port)
      const target = parseDatabaseUrl(viaProxy.toString())
      if (target._tag === "Failure") throw new Error(target.failure)
      const gw = await gatewayOnSql(target.success)
      try {
        expect((await readyz(gw)).json).toEqual({ status: "ready", checks: { database: "ok" } })

        // Connections stay open but nothing comes back: the probe gives up after 1 s, the answer does not wait longer.
        proxy.hang()
        const started = Date.now()
        const hung = await readyz(gw)
        const took = Date.now() - started
        expect(hung.status).toBe(503)
        expect(hung.json).toEqual({ status: "not_ready", reason: "database timed out", checks: { database: "timeout" } })
        expect(took).toBeGreaterThanOrEqual(900)
        expect(took).toBeLessThan(2_000)
        expect((await call(gw.url, "/health")).status).toBe(200)

        // Gone: connections cut and refused.
        await proxy.close()
        await readyzBecomes(gw, { status: "not_ready", reason: "database unreachable", checks: { database: "unreachable" } })

        // Back on the same address: ready again without a restart.
        await proxy.reopen()
        await readyzBecomes(gw, { status: "ready", checks: { database: "ok" } })
      } finally {
        await gw.close()
        await proxy.close()
        await backend.cleanup()
      }
    })
  })
})

const redisReady = await redisReachable()

if (redisReady) {
  describe("/readyz with Redis configured", () => {
    it("is ready when the database and Redis answer", async () => {
      const gw = await gatewayOnSql(undefined, REDIS_URL)
      try {
        const res = await readyz(gw)
        expect(res.status).toBe(200)
        expect(res.json).toEqual({ status: "ready", checks: { database: "ok", redis: "ok" } })
      } finally {
        await gw.close()
      }
    })

    it.runIf(redisServerAvailable())("Redis stops: 503 redis unreachable; it comes back: 200 again", async () => {
      const server = await privateRedis()
      await server.start()
      const gw = await gatewayOnSql(undefined, server.url)
      try {
        expect((await readyz(gw)).json).toEqual({ status: "ready", checks: { database: "ok", redis: "ok" } })
        await server.stop()
        const down = { status: "not_ready", reason: "redis unreachable", checks: { database: "ok", redis: "unreachable" } }
        await readyzBecomes(gw, down)
        const res = await readyz(gw)
        expect(res.status).toBe(503)
        expect((await call(gw.url, "/health")).status).toBe(200)
        await server.start()
        await readyzBecomes(gw, { status: "ready", checks: { database: "ok", redis: "ok" } })
      } finally {
        await gw.close()
        await server.stop()
      }
    })
  })
} else if (requireServices) {
  describe("/readyz with Redis configured", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the /readyz Redis tests (set REDIS_TEST_URL)`)
  describe.skip(`/readyz with Redis configured (skipped: not reachable at ${REDIS_URL})`, () => {
    it("checks Redis", () => undefined)
  })
}
