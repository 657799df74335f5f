/**
 * Requests that started (passed eligibility) but were never settled nor closed: the process died
 * between the upstream answer and settlement. Each is logged once, as an error naming the request
 * id, so an operator can reconcile it against the upstream's own records.
 */
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { DbInt, decodeRows } from "./rows.js"

const OpenRow = Schema.Struct({ request_id: Schema.String, key_id: Schema.String, model: Schema.String, started_at: DbInt })

const LIMIT = 500

/** Reports open requests that started before `cutoff` (epoch ms) and marks them reported. */
export const reportOrphans = Effect.fnUntraced(function*(cutoff: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(OpenRow)(
    yield* sql`SELECT request_id, key_id, model, started_at FROM usage_open
      WHERE reported_at IS NULL AND started_at < ${cutoff} ORDER BY started_at LIMIT ${LIMIT}`
  )
  for (const r of rows) {
    yield* Effect.logError("request was never settled (the gateway stopped first); reconcile it").pipe(
      Effect.annotateLogs({
        request_id: r.request_id,
        key: r.key_id,
        model: r.model,
        started_at: new Date(r.started_at).toISOString()
      })
    )
  }
  if (rows.length > 0) {
    yield* sql`UPDATE usage_open SET reported_at = ${(yield* Clock.currentTimeMillis)} WHERE request_id IN ${sql.in(rows.map((r) => r.request_id))}`
  }
  return rows.length
})
