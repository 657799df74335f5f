/** Store.layerTest: a Store with no file and no server, for tests of code that needs one. */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { expect, it } from "vitest"
import { AppConfig } from "../../src/config/AppConfig.js"
import { Store } from "../../src/store/Store.js"
import { dataOf } from "./harness.js"
it("Store.layerTest runs over a migrated in-memory SQLite database", async () => {
  const layer = Store.layerTest().pipe(Layer.provide(AppConfig.layer(dataOf({ groups: [], users: [], keys: [] }), "test")))
  const n = await Effect.runPromise(Effect.gen(function*() {
    const store = yield* Store
    const sql = yield* SqlClient.SqlClient
    yield* store.flush
    const rows = yield* sql`SELECT COUNT(*) AS n FROM modelgate_migrations`
    return rows[0]
  }).pipe(Effect.provide(layer)))
  expect(Number((n as { n: number }).n)).toBeGreaterThan(0)
})
