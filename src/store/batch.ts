/**
 * One settlement batch as SQL, in two steps, so it can run on a connection of this process or be
 * handed whole to the SQLite writer thread (writerThread.ts):
 *
 * 1. `eventSteps`: the open markers, and every settlement's usage_events row. The row's primary
 *    key (the request id) decides which settlements are new: the insert returns only those.
 * 2. `totalSteps`: for the new settlements only, balances, subscription windows, key quotas and
 *    daily rollups move, and the finished markers go. The changed figures come back (RETURNING)
 *    for the in-process caches.
 *
 * Rows are touched in a fixed order (users, subscriptions, keys, rollups; each sorted) so concurrent
 * instances on PostgreSQL cannot deadlock on each other.
 */
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { KeyStatus } from "../domain/config.js"
import type { StoreError } from "../domain/errors.js"
import type { Micros } from "../domain/model.js"
import { windowStart, type WindowSpends } from "../domain/subscription.js"
import { dayOf } from "../domain/usageReport.js"
import type { Settlement } from "../services/Quota.js"
import { spendsOf, SpendRow } from "./queries.js"
import { DbInt, decodeRows } from "./rows.js"

/** A settlement as the batch writes it: the cost is computed before it is queued. */
export interface BatchSettle {
  readonly settlement: Settlement
  readonly cost: Micros
  /** Its open marker was written, so the settlement removes it. */
  readonly closesMarker: boolean
}

/** A request's open marker, written once the request has run for a while (see Store.track). */
export interface OpenMarker {
  readonly requestId: string
  readonly keyId: string
  readonly model: string
  readonly at: number
}

/** Fresh figures read back from the rows a batch changed, for the in-process caches. */
export interface Committed {
  readonly balances: ReadonlyArray<{ readonly user: string; readonly balanceMicros: Micros }>
  readonly keys: ReadonlyArray<{ readonly id: string; readonly status: KeyStatus; readonly quotaUsedMicros: Micros }>
  readonly subscriptions: ReadonlyArray<{ readonly user: string; readonly group: string; readonly spends: WindowSpends }>
}

/** What a committed batch says: which settlements were new (the rest had been settled before). */
export interface BatchOutcome {
  readonly fresh: ReadonlySet<string>
  readonly committed: Committed
}

/** What a step's returned rows are. */
export type RowsOf = "fresh" | "balance" | "subscription" | "key"

export interface Step {
  readonly statement: Statement.Statement<unknown>
  /** Set when the statement returns rows the batch reads; the others' rows are not wanted. */
  readonly rows?: RowsOf
}

export interface Batch {
  readonly opens: ReadonlyArray<OpenMarker>
  readonly settles: ReadonlyArray<BatchSettle>
  readonly closes: ReadonlyArray<string>
}

const CHUNK = 100 // rows per multi-row statement: far below both drivers' parameter limits

const chunks = <A>(xs: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < xs.length; i += CHUNK) out.push(xs.slice(i, i + CHUNK))
  return out
}

const sum = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n)
const byKey = <A>(m: Map<string, A>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

export const eventSteps = (sql: SqlClient.SqlClient, batch: Batch): Array<Step> => {
  const steps: Array<Step> = []
  for (const part of chunks(batch.opens)) {
    steps.push({
      statement: sql`INSERT INTO usage_open ${
        sql.insert(part.map((o) => ({ request_id: o.requestId, key_id: o.keyId, model: o.model, started_at: o.at })))
      } ON CONFLICT (request_id) DO NOTHING`
    })
  }
  for (const part of chunks(batch.settles)) {
    steps.push({
      rows: "fresh",
      statement: sql`INSERT INTO usage_events ${
        sql.insert(part.map(({ cost, settlement: s }) => ({
          request_id: s.requestId,
          key_id: s.principal.key.id,
          user_name: s.principal.user.name,
          group_name: s.principal.group.name,
          model: s.model,
          day: dayOf(s.at),
          at: s.at.getTime(),
          input_tokens: s.usage.inputTokens,
          output_tokens: s.usage.outputTokens,
          cache_read_tokens: s.usage.cacheReadTokens,
          cache_creation_tokens: s.usage.cacheCreationTokens,
          reasoning_tokens: s.usage.reasoningTokens,
          cost_micros: cost,
          charged_to: s.principal.group.billing
        })))
      } ON CONFLICT (request_id) DO NOTHING RETURNING request_id`
    })
  }
  return steps
}

interface DailyTotals {
  keyId: string
  day: string
  model: string
  requests: number
  input: number
  output: number
  cacheRead: number
  cacheCreation: number
  cost: number
}

/** The second step, for the settlements `fresh` holds (`now` stamps updated_at). */
export const totalSteps = (sql: SqlClient.SqlClient, batch: Batch, fresh: ReadonlySet<string>, now: number): Array<Step> => {
  const balances = new Map<string, number>()
  const keys = new Map<string, number>()
  // A subscription's costs grouped by the windows they fall in (a batch may straddle midnight).
  const subs = new Map<string, { user: string; group: string; at: number; cost: number }>()
  const daily = new Map<string, DailyTotals>()
  for (const { cost, settlement: s } of batch.settles) {
    if (!fresh.has(s.requestId)) continue
    const { group, key, user } = s.principal
    const at = s.at.getTime()
    if (group.billing === "subscription") {
      const id = `${user.name}\u0000${group.name}\u0000${String(windowStart("daily", at)).padStart(15, "0")}`
      const entry = subs.get(id)
      if (entry) entry.cost += cost
      else subs.set(id, { user: user.name, group: group.name, at, cost })
    } else {
      sum(balances, user.name, cost)
    }
    sum(keys, key.id, cost)
    const day = dayOf(s.at)
    const id = `${key.id}\u0000${day}\u0000${s.model}`
    const t = daily.get(id) ??
      { keyId: key.id, day, model: s.model, requests: 0, input: 0, output: 0, cacheRead: 0, cacheCreation: 0, cost: 0 }
    t.requests += 1
    t.input += s.usage.inputTokens
    t.output += s.usage.outputTokens
    t.cacheRead += s.usage.cacheReadTokens
    t.cacheCreation += s.usage.cacheCreationTokens
    t.cost += cost
    daily.set(id, t)
  }

  const steps: Array<Step> = []
  for (const [user, cost] of byKey(balances)) {
    steps.push({
      rows: "balance",
      statement: sql`UPDATE users SET balance_micros = balance_micros - ${cost}, balance_touched = 1,
          updated_at = ${now} WHERE name = ${user} RETURNING name, balance_micros`
    })
  }
  for (const [, { at, cost, group, user }] of byKey(subs)) {
    const d = windowStart("daily", at)
    const w = windowStart("weekly", at)
    const m = windowStart("monthly", at)
    // A window start older than this cost's window means that window is over: start afresh.
    steps.push({
      rows: "subscription",
      statement: sql`UPDATE subscriptions SET
          daily_used_micros = CASE WHEN daily_start = ${d} THEN daily_used_micros + ${cost}
            WHEN daily_start < ${d} THEN ${cost} ELSE daily_used_micros END,
          daily_start = CASE WHEN daily_start < ${d} THEN ${d} ELSE daily_start END,
          weekly_used_micros = CASE WHEN weekly_start = ${w} THEN weekly_used_micros + ${cost}
            WHEN weekly_start < ${w} THEN ${cost} ELSE weekly_used_micros END,
          weekly_start = CASE WHEN weekly_start < ${w} THEN ${w} ELSE weekly_start END,
          monthly_used_micros = CASE WHEN monthly_start = ${m} THEN monthly_used_micros + ${cost}
            WHEN monthly_start < ${m} THEN ${cost} ELSE monthly_used_micros END,
          monthly_start = CASE WHEN monthly_start < ${m} THEN ${m} ELSE monthly_start END,
          updated_at = ${now}
        WHERE user_name = ${user} AND group_name = ${group}
        RETURNING user_name, group_name, daily_start, daily_used_micros, weekly_start, weekly_used_micros,
          monthly_start, monthly_used_micros`
    })
  }
  for (const [id, cost] of byKey(keys)) {
    // SET expressions read the row as it was, so `quota_used_micros + cost` is the new figure.
    steps.push({
      rows: "key",
      statement: sql`UPDATE api_keys SET quota_used_micros = quota_used_micros + ${cost},
          status = CASE WHEN status = 'active' AND quota_micros IS NOT NULL AND quota_micros > 0
            AND quota_used_micros + ${cost} >= quota_micros THEN 'quota_exhausted' ELSE status END,
          updated_at = ${now}
        WHERE id = ${id} RETURNING id, status, quota_used_micros`
    })
  }
  for (const part of chunks(byKey(daily).map(([, t]) => t))) {
    steps.push({
      statement: sql`INSERT INTO usage_daily ${
        sql.insert(part.map((t) => ({
          key_id: t.keyId,
          day: t.day,
          model: t.model,
          requests: t.requests,
          input_tokens: t.input,
          output_tokens: t.output,
          cache_read_tokens: t.cacheRead,
          cache_creation_tokens: t.cacheCreation,
          cost_micros: t.cost
        })))
      } ON CONFLICT (key_id, day, model) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
        input_tokens = usage_daily.input_tokens + excluded.input_tokens,
        output_tokens = usage_daily.output_tokens + excluded.output_tokens,
        cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
        cache_creation_tokens = usage_daily.cache_creation_tokens + excluded.cache_creation_tokens,
        cost_micros = usage_daily.cost_micros + excluded.cost_micros`
    })
  }
  const finished = [...batch.settles.filter((s) => s.closesMarker).map((s) => s.settlement.requestId), ...batch.closes]
  for (const part of chunks(finished)) steps.push({ statement: sql`DELETE FROM usage_open WHERE request_id IN ${sql.in(part)}` })
  return steps
}

const RequestIdRow = Schema.Struct({ request_id: Schema.String })
const BalanceRow = Schema.Struct({ name: Schema.String, balance_micros: DbInt })
const KeyRow = Schema.Struct({ id: Schema.String, status: KeyStatus, quota_used_micros: DbInt })
const SubRow = Schema.extend(SpendRow, Schema.Struct({ user_name: Schema.String, group_name: Schema.String }))

/** The request ids a "fresh" step returned. */
export const freshIds = (rows: ReadonlyArray<unknown>, into: Set<string>): Effect.Effect<void, StoreError> =>
  Effect.map(decodeRows(RequestIdRow)(rows), (decoded) => {
    for (const r of decoded) into.add(r.request_id)
  })

/** The figures the second step's RETURNING rows carry, in step order. */
export const committedOf = (
  results: ReadonlyArray<readonly [Step, ReadonlyArray<unknown>]>
): Effect.Effect<Committed, StoreError> =>
  Effect.gen(function*() {
    const committed = {
      balances: [] as Array<Committed["balances"][number]>,
      keys: [] as Array<Committed["keys"][number]>,
      subscriptions: [] as Array<Committed["subscriptions"][number]>
    }
    for (const [step, rows] of results) {
      if (step.rows === "balance") {
        for (const r of yield* decodeRows(BalanceRow)(rows)) committed.balances.push({ user: r.name, balanceMicros: r.balance_micros })
      } else if (step.rows === "subscription") {
        for (const r of yield* decodeRows(SubRow)(rows)) {
          committed.subscriptions.push({ user: r.user_name, group: r.group_name, spends: spendsOf(r) })
        }
      } else if (step.rows === "key") {
        for (const r of yield* decodeRows(KeyRow)(rows)) {
          committed.keys.push({ id: r.id, status: r.status, quotaUsedMicros: r.quota_used_micros })
        }
      }
    }
    return committed
  })
