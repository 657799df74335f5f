/**
 * A fresh PostgreSQL database reached through a stall proxy (test/support/stallProxy.ts), for the
 * tests of a database that accepts connections but stops answering. The gateway under test is
 * given `url`/`target` (through the proxy); the test itself may reach `direct` (not through it).
 */
import { type DatabaseTarget, parseDatabaseUrl } from "../../src/store/target.js"
import { type StallProxy, startStallProxy } from "../support/stallProxy.js"
import { PG_URL, postgresBackend, type TestDatabase } from "./harness.js"

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
