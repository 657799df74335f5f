/**
 * Usage for operators, from the daily rollups (never a scan of usage_events): totals per key,
 * user, group, model, upstream account or day over a day range, and the requests still marked open.
 * Usage settled before accounts were recorded has the account ''.
 */
import { SqlClient } from "effect/sql"
import { Effect, Schema } from "effect"
import { KeyStatus } from "../../domain/config.js"
import { dayOf } from "../../domain/usageReport.js"
import { Totals } from "../report.js"
import { DbInt, decodeRows, orStoreError } from "../rows.js"

export const UsageDimension = Schema.Literals(["key", "user", "group", "model", "account", "day"])
export type UsageDimension = typeof UsageDimension.Type

const COLUMN: Record<UsageDimension, string> = {
  key: "d.key_id",
  user: "k.user_name",
  group: "k.group_name",
  model: "d.model",
  account: "d.account",
  day: "d.day"
}

export interface UsageQuery {
  readonly by: UsageDimension
  /** Inclusive YYYY-MM-DD (UTC). */
  readonly from: string
  readonly to: string
  readonly key?: string | undefined
  readonly user?: string | undefined
  readonly group?: string | undefined
  readonly model?: string | undefined
}

const UsageRow = Totals.pipe(Schema.fieldsAssign({ bucket: Schema.String }))
export type UsageRow = typeof UsageRow.Type

export const usageBreakdown = (q: UsageQuery) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The column comes from a fixed table (COLUMN), never from the request's text.
    const column = sql.unsafe(COLUMN[q.by])
    const where = sql.and([
      sql`d.day >= ${q.from}`,
      sql`d.day <= ${q.to}`,
      ...(q.key === undefined ? [] : [sql`d.key_id = ${q.key}`]),
      ...(q.user === undefined ? [] : [sql`k.user_name = ${q.user}`]),
      ...(q.group === undefined ? [] : [sql`k.group_name = ${q.group}`]),
      ...(q.model === undefined ? [] : [sql`d.model = ${q.model}`])
    ])
    return yield* decodeRows(UsageRow)(
      yield* sql`SELECT ${column} AS bucket, SUM(d.requests) AS requests, SUM(d.input_tokens) AS input_tokens,
          SUM(d.output_tokens) AS output_tokens, SUM(d.cache_read_tokens) AS cache_read_tokens,
          SUM(d.cache_creation_tokens) AS cache_creation_tokens, SUM(d.cost_micros) AS cost_micros
        FROM usage_daily d JOIN api_keys k ON k.id = d.key_id
        WHERE ${where}
        GROUP BY ${column} ORDER BY ${column}`
    )
  }).pipe(orStoreError("reading usage failed"))

const SummaryRow = Schema.Struct({
  id: Schema.String,
  user_name: Schema.String,
  group_name: Schema.String,
  status: KeyStatus,
  today_requests: DbInt,
  today_cost_micros: DbInt,
  total_requests: DbInt,
  total_cost_micros: DbInt
})
export type UsageSummaryRow = typeof SummaryRow.Type

/** Per key: today's and all-time requests and cost, from the daily rollups. */
export const usageSummary = (now: Date) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const today = dayOf(now)
    return yield* decodeRows(SummaryRow)(
      yield* sql`SELECT k.id, k.user_name, k.group_name, k.status,
          COALESCE(SUM(CASE WHEN d.day = ${today} THEN d.requests ELSE 0 END), 0) AS today_requests,
          COALESCE(SUM(CASE WHEN d.day = ${today} THEN d.cost_micros ELSE 0 END), 0) AS today_cost_micros,
          COALESCE(SUM(d.requests), 0) AS total_requests,
          COALESCE(SUM(d.cost_micros), 0) AS total_cost_micros
        FROM api_keys k LEFT JOIN usage_daily d ON d.key_id = k.id
        WHERE k.deleted_at IS NULL
        GROUP BY k.id, k.user_name, k.group_name, k.status
        ORDER BY k.user_name, k.id`
    )
  }).pipe(orStoreError("reading usage failed"))

const OpenRow = Schema.Struct({ request_id: Schema.String, key_id: Schema.String, model: Schema.String, started_at: DbInt })

/** Requests still marked open: in flight now, or left behind by a crash (see orphans.ts). */
export const openRequests = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(OpenRow)(
    yield* sql`SELECT request_id, key_id, model, started_at FROM usage_open ORDER BY started_at`
  )
}).pipe(orStoreError("reading open requests failed"))
