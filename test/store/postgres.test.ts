/**
 * The same store suite on PostgreSQL (DATABASE_TEST_URL, default postgres://postgres@127.0.0.1:5432/test),
 * each test in a fresh schema dropped afterwards. Skipped with a warning when PostgreSQL is not
 * reachable, unless MODELGATE_REQUIRE_SERVICES=1 (CI), where that fails the run.
 */
import { describe, expect, it } from "vitest"
import { adminSuite } from "./adminSuite.js"
import { PG_URL, postgresBackend, postgresReachable, requireServices } from "./harness.js"
import { cliSuite } from "./cliSuite.js"
import { gatewaySuite } from "./gatewaySuite.js"
import { sharedDatabaseSuite, storeSuite } from "./suite.js"

const reachable = await postgresReachable()

if (reachable) {
  describe("store on PostgreSQL", () => {
    storeSuite(postgresBackend)
  })
  describe("store on PostgreSQL, two instances", () => {
    sharedDatabaseSuite(postgresBackend)
  })
  describe("gateway on PostgreSQL", () => {
    gatewaySuite(postgresBackend)
  })
  describe("CLI on PostgreSQL", () => {
    cliSuite(postgresBackend)
  })
  describe("admin API on PostgreSQL", () => {
    adminSuite(postgresBackend)
  })
} else if (requireServices) {
  describe("store on PostgreSQL", () => {
    it(`PostgreSQL is reachable at ${PG_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`PostgreSQL is not reachable at ${PG_URL}`)
    })
  })
} else {
  console.warn(`PostgreSQL is not reachable at ${PG_URL}: skipping the PostgreSQL store suite (set DATABASE_TEST_URL)`)
  describe.skip(`store on PostgreSQL (skipped: not reachable at ${PG_URL})`, () => {
    it("runs the store suite", () => undefined)
  })
}
