/**
 * /v1/usage figures from the database: the key's current state and the usage_daily rollups
 * (today, all time, and per model over a day range). Never a scan of usage_events.
 */
import { SqlClient } from "effect/sql"
import { Effect, Option, Schema } from "effect"
import { KeyStatus } from "../domain/config.js"
import type { Principal } from "../domain/model.js"
import { dayOf, type UsageSnapshot, type UsageTotals } from "../domain/usageReport.js"
import type { DayRange } from "../services/quota/Quota.js"
import { balanceOf, subscriptionOf } from "./queries.js"
import { DbInt, DbIntOrNull, dateOrUndefined, decodeRows } from "./rows.js"

/** A usage_daily sum: the columns every report over the rollups reads. */
export const Totals = Schema.Struct({
  requests: DbInt,
  input_tokens: DbInt,
  output_tokens: DbInt,
  cache_read_tokens: DbInt,
  cache_creation_tokens: DbInt,
  cost_micros: DbInt
})
const ModelTotals = Totals.pipe(Schema.fieldsAssign({ model: Schema.String }))
const DayTotals = Totals.pipe(Schema.fieldsAssign({ day: Schema.String }))

const toTotals = (r: typeof Totals.Type): UsageTotals => ({
  requests: r.requests,
  inputTokens: r.input_tokens,
  outputTokens: r.output_tokens,
  cacheReadTokens: r.cache_read_tokens,
  cacheCreationTokens: r.cache_creation_tokens,
  costMicros: r.cost_micros
})

const KeyState = Schema.Struct({
  status: KeyStatus,
  quota_micros: DbIntOrNull,
  quota_used_micros: DbInt,
  expires_at: DbIntOrNull
})

const zero = { requests: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0, costMicros: 0 }

export const loadSnapshot = Effect.fnUntraced(function*(p: Principal, range: DayRange, now: Date) {
  const sql = yield* SqlClient.SqlClient
  const sums = sql`COALESCE(SUM(requests), 0) AS requests, COALESCE(SUM(input_tokens), 0) AS input_tokens,
    COALESCE(SUM(output_tokens), 0) AS output_tokens, COALESCE(SUM(cache_read_tokens), 0) AS cache_read_tokens,
    COALESCE(SUM(cache_creation_tokens), 0) AS cache_creation_tokens, COALESCE(SUM(cost_micros), 0) AS cost_micros`
  const [keyRows, today, total, byModel, byDay] = yield* Effect.all([
    sql`SELECT status, quota_micros, quota_used_micros, expires_at FROM api_keys WHERE id = ${p.key.id}`.pipe(
      Effect.flatMap(decodeRows(KeyState))
    ),
    sql`SELECT ${sums} FROM usage_daily WHERE key_id = ${p.key.id} AND day = ${dayOf(now)}`.pipe(
      Effect.flatMap(decodeRows(Totals))
    ),
    sql`SELECT ${sums} FROM usage_daily WHERE key_id = ${p.key.id}`.pipe(Effect.flatMap(decodeRows(Totals))),
    sql`SELECT model, ${sums} FROM usage_daily
      WHERE key_id = ${p.key.id} AND day >= ${range.from} AND day <= ${range.to} GROUP BY model`.pipe(
      Effect.flatMap(decodeRows(ModelTotals))
    ),
    sql`SELECT day, ${sums} FROM usage_daily
      WHERE key_id = ${p.key.id} AND day >= ${range.from} AND day <= ${range.to} GROUP BY day ORDER BY day`.pipe(
      Effect.flatMap(decodeRows(DayTotals))
    )
  ])
  const state = keyRows[0]
  const key = state === undefined ? p.key : {
    ...p.key,
    status: state.status,
    quotaMicros: state.quota_micros ?? undefined,
    quotaUsedMicros: state.quota_used_micros,
    expiresAt: dateOrUndefined(state.expires_at)
  }
  const subscription = p.group.billing === "subscription"
    ? Option.getOrUndefined(yield* subscriptionOf(p.user.name, p.group.name))
    : undefined
  return {
    key,
    group: p.group,
    quotaUsedMicros: key.quotaUsedMicros,
    balanceMicros: yield* balanceOf(p.user.name),
    today: today[0] === undefined ? zero : toTotals(today[0]),
    total: total[0] === undefined ? zero : toTotals(total[0]),
    byModel: byModel.map((r) => ({ model: r.model, totals: toTotals(r) })),
    byDay: byDay.map((r) => ({ day: r.day, totals: toTotals(r) })),
    subscription
  } satisfies UsageSnapshot
})
