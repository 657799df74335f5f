/**
 * A fresh PostgreSQL database reached through a stall proxy (test/support/stallProxy.ts), for the
 * tests of a database that accepts connections but stops answering. The gateway under test is
 * given `url`/`target` (through the proxy); the test itself may reach `direct` (not through it).
 * `describeOnPostgres` runs such a suite only where PostgreSQL is reachable.
 */
import { describe, expect, it } from "vitest"
import { type DatabaseTarget, parseDatabaseUrl } from "../../src/store/target.js"
import { type StallProxy, startStallProxy } from "../support/stallProxy.js"
import { PG_URL, postgresBackend, postgresReachable, requireServices, type TestDatabase } from "./harness.js"

export interface StallablePostgres {
  readonly proxy: StallProxy
  /** DATABASE_URL through the proxy. */
  readonly url: string
  readonly target: DatabaseTarget
  /** The same database, not through the proxy. */
  readonly direct: TestDatabase
  /** Closes the proxy and drops the database. */
  readonly close: () => Promise<void>
}

export const startStallablePostgres = async (): Promise<StallablePostgres> => {
  const backend = postgresBackend()
  const direct = await backend.fresh()
  const pg = new URL(PG_URL)
  const proxy = await startStallProxy({ host: pg.hostname, port: Number(pg.port || 5432) })
  const through = new URL(direct.url)
  through.host = `127.0.0.1:${proxy.port}`
  const target = parseDatabaseUrl(through.toString())
  if (target._tag !== "Success") throw new Error(target.failure)
  return {
    proxy,
    url: through.toString(),
    target: target.success,
    direct,
    close: async () => {
      await proxy.close()
      await backend.cleanup()
    }
  }
}

/**
 * `suite` as `describe(title)` when PostgreSQL is reachable; otherwise a failing test under
 * MODELGATE_REQUIRE_SERVICES=1, or a warning and a skipped block.
 */
export const describeOnPostgres = async (title: string, suite: () => void): Promise<void> => {
  if (await postgresReachable()) {
    describe(title, suite)
  } else if (requireServices) {
    describe(title, () => {
      it(`PostgreSQL is reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
        expect.fail(`PostgreSQL is not reachable at ${PG_URL}`)
      })
    })
  } else {
    console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping "${title}" (set DATABASE_TEST_URL)`)
    describe.skip(`${title} (skipped: not reachable at ${PG_URL})`, () => {
      it("needs PostgreSQL", () => undefined)
    })
  }
}
