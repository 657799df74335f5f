/**
 * Several instances on one host, as examples/several-instances.yaml says: PostgreSQL and Redis
 * shared, a settlement journal each. Both serve; a third process started on a journal that is in
 * use refuses to start and names the path and SETTLEMENT_JOURNAL_PATH, because a journal's replay
 * rewrites the file to what its own process has pending and would delete another's settlements.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cleanEnv, freePort, type Gateway, ROOT, run, START, startGateway } from "../cli/processes.js"
import { type Backend, PG_URL, postgresBackend, postgresReachable, requireServices } from "../store/harness.js"

const REDIS_URL = process.env["REDIS_TEST_URL"] ?? "redis://127.0.0.1:6379"
const CONFIG = join(ROOT, "examples", "several-instances.yaml")

const envFile = (name: string): Record<string, string> =>
  Object.fromEntries(readFileSync(join(ROOT, "examples", name), "utf8").split("\n")
    .filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]))

const reachable = await postgresReachable()
if (!reachable && requireServices) throw new Error(`PostgreSQL is required (MODELGATE_REQUIRE_SERVICES=1) at ${PG_URL}`)
if (!reachable) console.warn(`skipping several-instances: PostgreSQL unreachable at ${PG_URL}`)

describe.skipIf(!reachable)("two instances on one host, as examples/several-instances.yaml says", () => {
  let dir: string
  let env: Record<string, string>
  let postgres: Backend
  const gateways: Array<Gateway> = []
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "modelgate-instances-"))
    // The example's environment, pointed at the test's services; a schema of the test's own.
    postgres = postgresBackend()
    const { url } = await postgres.fresh()
    env = cleanEnv({ ...envFile("several-instances.env"), DATABASE_URL: url, REDIS_URL, LOG_LEVEL: "Warn" })
    for (const n of [1, 2]) {
      gateways.push(await startGateway(dir, { ...env, SETTLEMENT_JOURNAL_PATH: join(dir, `instance-${n}.journal`) }, ["--config", CONFIG]))
    }
  }, 120_000)
  afterAll(async () => {
    for (const gw of gateways) await gw.stop()
    await postgres.cleanup()
    rmSync(dir, { recursive: true, force: true })
  })

  it("both serve from the shared database", async () => {
    for (const gw of gateways) {
      const res = await fetch(`${gw.base}/v1/models`, { headers: { authorization: "Bearer sk-alice-openai-change-me" } })
      expect(res.status).toBe(200)
      expect(await fetch(`${gw.base}/readyz`).then((r) => r.status)).toBe(200)
    }
  })

  it("a third process on instance 1's journal refuses to start, naming the path and SETTLEMENT_JOURNAL_PATH", async () => {
    const journal = join(dir, "instance-1.journal")
    const third = await run([START, "--config", CONFIG], { cwd: dir, env: { ...env, PORT: String(await freePort()), SETTLEMENT_JOURNAL_PATH: journal } })
    expect(third.code).toBe(1)
    expect(third.stderr).toContain(journal)
    expect(third.stderr).toContain("SETTLEMENT_JOURNAL_PATH")
    // The first instance still serves.
    expect(await fetch(`${gateways[0]!.base}/readyz`).then((r) => r.status)).toBe(200)
  })
})
