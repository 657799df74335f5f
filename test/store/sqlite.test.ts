/** The store suite on SQLite, the embedded default: always runs. */
import { describe } from "vitest"
import { adminSuite } from "./adminSuite.js"
import { sqliteBackend } from "./harness.js"
import { cliSuite } from "./cliSuite.js"
import { gatewaySuite } from "./gatewaySuite.js"
import { storeSuite } from "./suite.js"

describe("store on SQLite", () => {
  storeSuite(sqliteBackend)
})

describe("gateway on SQLite", () => {
  gatewaySuite(sqliteBackend)
})

describe("CLI on SQLite", () => {
  cliSuite(sqliteBackend)
})

describe("admin API on SQLite", () => {
  adminSuite(sqliteBackend)
})
