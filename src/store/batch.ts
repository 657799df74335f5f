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
 *
 * The statements are plain text with `?` placeholders (numbered `$n` for PostgreSQL by `textFor`)
 * and a flat parameter list, rather than @effect/sql statements: every batch built its five
 * statements' fragments through the sql template and compiled them back to text, for texts that
 * only ever come in a few shapes (they are built once per shape here). Measured in process, 16
 * settlements in flight: 33-44 -> 25-39 µs of event-loop CPU per settlement.
 */
import { Result, Schema } from "effect"
import { KeyStatus } from "../domain/config.js"
import type { StoreError } from "../domain/errors.js"
import type { Micros } from "../domain/model.js"
import { windowStart, type WindowSpends } from "../domain/subscription.js"
import { dayOf } from "../domain/usageReport.js"
import type { Settlement } from "../domain/settlement.js"
import type { Dialect } from "./client.js"
import { spendsOf, SpendRow } from "./queries.js"
import { DbInt, decodeRowsResult } from "./rows.js"

/** A settlement as the batch writes it: the cost is computed before it is queued. */
export interface BatchSettle {
  readonly settlement: Settlement
  readonly cost: Micros
  /** The cost is the fallback price's (the model had no price); absent means priced. */
  readonly priceFallback?: boolean
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

/** A parameter as both drivers bind it. */
export type Param = string | number | null

export interface Step {
  /** With `?` placeholders. */
  readonly text: string
  readonly params: ReadonlyArray<Param>
  /** Set when the statement returns rows the batch reads; the others' rows are not wanted. */
  readonly rows?: RowsOf
}

/** Texts come in a few shapes (a dialect, a row count): each is built once. */
const memo = (build: (key: string) => string) => {
  const built = new Map<string, string>()
  return (key: string): string => {
    let out = built.get(key)
    if (out === undefined) {
      out = build(key)
      built.set(key, out)
    }
    return out
  }
}

const numbered = memo((text) => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
})
/** The statement's text for a dialect: PostgreSQL numbers its placeholders. */
export const textFor = (text: string, dialect: Dialect): string => (dialect === "sqlite" ? text : numbered(text))

/** `(?, ?), (?, ?)`: `rows` groups of `width` placeholders. */
const placeholders = (width: number, rows: number): string => {
  const one = `(${Array.from({ length: width }, () => "?").join(", ")})`
  return Array.from({ length: rows }, () => one).join(", ")
}

/** The INSERT of `rows` rows into one of the batch's tables: the columns once, the values row after row. */
const inserter = (table: string, columns: ReadonlyArray<string>, tail: string) => {
  const text = memo((rows) => `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${placeholders(columns.length, Number(rows))} ${tail}`)
  return (rows: number): string => text(String(rows))
}

const deleteOpen = memo((n) => `DELETE FROM usage_open WHERE request_id IN ${placeholders(Number(n), 1)}`)

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

const OPEN_COLUMNS = ["request_id", "key_id", "model", "started_at"]
const EVENT_COLUMNS = [
  "request_id",
  "key_id",
  "user_name",
  "group_name",
  "model",
  "day",
  "at",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
  "cost_micros",
  "charged_to",
  "estimated",
  "price_fallback",
  "account"
]

const insertOpen = inserter("usage_open", OPEN_COLUMNS, "ON CONFLICT (request_id) DO NOTHING")
const insertEvents = inserter("usage_events", EVENT_COLUMNS, "ON CONFLICT (request_id) DO NOTHING RETURNING request_id")

export const eventSteps = (batch: Batch): Array<Step> => {
  const steps: Array<Step> = []
  for (const part of chunks(batch.opens)) {
    const params: Array<Param> = []
    for (const o of part) params.push(o.requestId, o.keyId, o.model, o.at)
    steps.push({ text: insertOpen(part.length), params })
  }
  for (const part of chunks(batch.settles)) {
    const params: Array<Param> = []
    for (const { cost, priceFallback, settlement: s } of part) {
      const { group, key, user } = s.principal
      const u = s.usage
      params.push(s.requestId, key.id, user.name, group.name, s.model, dayOf(s.at), s.at.getTime())
      params.push(u.inputTokens, u.outputTokens, u.cacheReadTokens, u.cacheCreationTokens, u.reasoningTokens, cost, group.billing, s.estimated === true ? 1 : 0, priceFallback === true ? 1 : 0)
      params.push(s.account ?? null)
    }
    steps.push({
      rows: "fresh",
      text: insertEvents(part.length),
      params
    })
  }
  return steps
}

interface DailyTotals {
  keyId: string
  day: string
  model: string
  /** The account that answered ('' when none is known). */
  account: string
  requests: number
  input: number
  output: number
  cacheRead: number
  cacheCreation: number
  cost: number
}

/** The second step, for the settlements `fresh` holds (`now` stamps updated_at). */
const DAILY_COLUMNS = [
  "key_id",
  "day",
  "model",
  "account",
  "requests",
  "input_tokens",
  "output_tokens",
  "cache_read_tokens",
  "cache_creation_tokens",
  "cost_micros"
]
const DAILY_MERGE = `ON CONFLICT (key_id, day, model, account) DO UPDATE SET requests = usage_daily.requests + excluded.requests,
        input_tokens = usage_daily.input_tokens + excluded.input_tokens,
        output_tokens = usage_daily.output_tokens + excluded.output_tokens,
        cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
        cache_creation_tokens = usage_daily.cache_creation_tokens + excluded.cache_creation_tokens,
        cost_micros = usage_daily.cost_micros + excluded.cost_micros`

const insertDaily = inserter("usage_daily", DAILY_COLUMNS, DAILY_MERGE)

const BALANCE = `UPDATE users SET balance_micros = balance_micros - ?, balance_touched = 1, updated_at = ?
  WHERE name = ? RETURNING name, balance_micros`

// A window start older than this cost's window means that window is over: start afresh.
// Parameters: (start, cost, start, cost, start, start) per window, then updated_at, user, group.
const window = (name: string) =>
  `${name}_used_micros = CASE WHEN ${name}_start = ? THEN ${name}_used_micros + ?
      WHEN ${name}_start < ? THEN ? ELSE ${name}_used_micros END,
    ${name}_start = CASE WHEN ${name}_start < ? THEN ? ELSE ${name}_start END`
const SUBSCRIPTION = `UPDATE subscriptions SET ${window("daily")}, ${window("weekly")}, ${window("monthly")}, updated_at = ?
  WHERE user_name = ? AND group_name = ?
  RETURNING user_name, group_name, daily_start, daily_used_micros, weekly_start, weekly_used_micros,
    monthly_start, monthly_used_micros`

// SET expressions read the row as it was, so `quota_used_micros + cost` is the new figure.
const KEY = `UPDATE api_keys SET quota_used_micros = quota_used_micros + ?,
    status = CASE WHEN status = 'active' AND quota_micros IS NOT NULL AND quota_micros > 0
      AND quota_used_micros + ? >= quota_micros THEN 'quota_exhausted' ELSE status END,
    updated_at = ?
  WHERE id = ? RETURNING id, status, quota_used_micros`

export const totalSteps = (batch: Batch, fresh: ReadonlySet<string>, now: number): Array<Step> => {
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
    const account = s.account ?? ""
    const id = `${key.id}\u0000${day}\u0000${s.model}\u0000${account}`
    const t = daily.get(id) ??
      { keyId: key.id, day, model: s.model, account, requests: 0, input: 0, output: 0, cacheRead: 0, cacheCreation: 0, cost: 0 }
    t.requests += 1
    t.input += s.usage.inputTokens
    t.output += s.usage.outputTokens
    t.cacheRead += s.usage.cacheReadTokens
    t.cacheCreation += s.usage.cacheCreationTokens
    t.cost += cost
    daily.set(id, t)
  }

  const steps: Array<Step> = []
  for (const [user, cost] of byKey(balances)) steps.push({ rows: "balance", text: BALANCE, params: [cost, now, user] })
  for (const [, { at, cost, group, user }] of byKey(subs)) {
    const params: Array<Param> = []
    for (const start of [windowStart("daily", at), windowStart("weekly", at), windowStart("monthly", at)]) {
      params.push(start, cost, start, cost, start, start)
    }
    params.push(now, user, group)
    steps.push({ rows: "subscription", text: SUBSCRIPTION, params })
  }
  for (const [id, cost] of byKey(keys)) steps.push({ rows: "key", text: KEY, params: [cost, cost, now, id] })
  for (const part of chunks(byKey(daily).map(([, t]) => t))) {
    const params: Array<Param> = []
    for (const t of part) {
      params.push(t.keyId, t.day, t.model, t.account, t.requests, t.input, t.output, t.cacheRead, t.cacheCreation, t.cost)
    }
    steps.push({ text: insertDaily(part.length), params })
  }
  const finished = [...batch.settles.filter((s) => s.closesMarker).map((s) => s.settlement.requestId), ...batch.closes]
  for (const part of chunks(finished)) steps.push({ text: deleteOpen(String(part.length)), params: part })
  return steps
}

const RequestIdRow = Schema.Struct({ request_id: Schema.String })
const BalanceRow = Schema.Struct({ name: Schema.String, balance_micros: DbInt })
const KeyRow = Schema.Struct({ id: Schema.String, status: KeyStatus, quota_used_micros: DbInt })
const SubRow = SpendRow.pipe(Schema.fieldsAssign({ user_name: Schema.String, group_name: Schema.String }))

const requestIds = decodeRowsResult(RequestIdRow)
const balanceRows = decodeRowsResult(BalanceRow)
const keyRows = decodeRowsResult(KeyRow)
const subscriptionRows = decodeRowsResult(SubRow)

/** Adds the request ids a "fresh" step returned. */
export const freshIds = (rows: ReadonlyArray<unknown>, into: Set<string>): Result.Result<void, StoreError> =>
  Result.map(requestIds(rows), (decoded) => {
    for (const r of decoded) into.add(r.request_id)
  })

/** The figures the second step's RETURNING rows carry, in step order. */
export const committedOf = (
  results: ReadonlyArray<readonly [Step, ReadonlyArray<unknown>]>
): Result.Result<Committed, StoreError> => {
  const committed = {
    balances: [] as Array<Committed["balances"][number]>,
    keys: [] as Array<Committed["keys"][number]>,
    subscriptions: [] as Array<Committed["subscriptions"][number]>
  }
  for (const [step, rows] of results) {
    if (step.rows === "balance") {
      const decoded = balanceRows(rows)
      if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
      for (const r of decoded.success) committed.balances.push({ user: r.name, balanceMicros: r.balance_micros })
    } else if (step.rows === "subscription") {
      const decoded = subscriptionRows(rows)
      if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
      for (const r of decoded.success) committed.subscriptions.push({ user: r.user_name, group: r.group_name, spends: spendsOf(r) })
    } else if (step.rows === "key") {
      const decoded = keyRows(rows)
      if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
      for (const r of decoded.success) committed.keys.push({ id: r.id, status: r.status, quotaUsedMicros: r.quota_used_micros })
    }
  }
  return Result.succeed(committed)
}
