/**
 * Operator actions on the store (the CLI's backend): issue, list and disable keys, top up a
 * balance, summarise usage. The same tables and rules the gateway uses; running gateways see a
 * change within their cache TTL.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { keyIdFromHash, keyPrefix, sha256Hex } from "../config/resolve.js"
import { KeyStatus } from "../domain/config.js"
import { StoreError } from "../domain/errors.js"
import type { Micros } from "../domain/model.js"
import { dayOf } from "../domain/usageReport.js"
import { KeyColumns } from "./queries.js"
import { DbInt, decodeRows, epochOrNull, orStoreError } from "./rows.js"

export interface NewKey {
  readonly user: string
  readonly group: string
  readonly name?: string | undefined
  readonly quotaMicros?: Micros | undefined
  readonly expiresAt?: Date | undefined
  readonly concurrency?: number | undefined
}

export interface IssuedKey {
  readonly id: string
  /** The secret, returned once: only its SHA-256 is stored. */
  readonly key: string
  readonly prefix: string
}

const Name = Schema.Struct({ name: Schema.String })

const exists = (table: "users" | "groups", name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* decodeRows(Name)(yield* sql`SELECT name FROM ${sql(table)} WHERE name = ${name}`)
    return rows.length > 0
  })

/** 32 random bytes, base64url: the secret. `sk-mg-` makes a leaked key recognisable by scanners. */
const newSecret = () => `sk-mg-${randomBytes(32).toString("base64url")}`

export const createKey = (k: NewKey) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* exists("users", k.user))) {
      return yield* new StoreError({ message: `unknown user '${k.user}' (users come from the config file, synced at start)` })
    }
    if (!(yield* exists("groups", k.group))) {
      return yield* new StoreError({ message: `unknown group '${k.group}' (groups come from the config file, synced at start)` })
    }
    const key = newSecret()
    const hash = sha256Hex(key)
    const id = k.name ?? keyIdFromHash(hash)
    const taken = yield* sql`SELECT id FROM api_keys WHERE id = ${id}`
    if (taken.length > 0) return yield* new StoreError({ message: `a key named '${id}' already exists` })
    const now = Date.now()
    yield* sql`INSERT INTO api_keys (id, hash, prefix, user_name, group_name, status, disabled_by, quota_micros,
        quota_used_micros, expires_at, concurrency, source, created_at, updated_at)
      VALUES (${id}, ${hash}, ${keyPrefix(key)}, ${k.user}, ${k.group}, 'active', NULL, ${k.quotaMicros ?? null}, 0,
        ${epochOrNull(k.expiresAt)}, ${k.concurrency ?? null}, 'cli', ${now}, ${now})`
    return { id, key, prefix: keyPrefix(key) } satisfies IssuedKey
  }).pipe(orStoreError("creating the key failed"))

const KeyRow = Schema.Struct({ ...KeyColumns, source: Schema.String })
export type KeyRow = typeof KeyRow.Type

export const listKeys = (filter: { readonly user?: string | undefined; readonly group?: string | undefined }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = sql.and([
      ...(filter.user === undefined ? [] : [sql`user_name = ${filter.user}`]),
      ...(filter.group === undefined ? [] : [sql`group_name = ${filter.group}`])
    ])
    return yield* decodeRows(KeyRow)(
      yield* sql`SELECT id, prefix, user_name, group_name, status, quota_micros, quota_used_micros, expires_at, source
        FROM api_keys WHERE ${where} ORDER BY user_name, id`
    )
  }).pipe(orStoreError("listing keys failed"))

/** Disabled by the CLI stays disabled across restarts, even for a key the config file lists. */
export const disableKey = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`UPDATE api_keys SET status = 'disabled', disabled_by = 'cli', updated_at = ${Date.now()}
      WHERE id = ${id} RETURNING id`
    if (rows.length === 0) return yield* new StoreError({ message: `no key named '${id}'` })
  }).pipe(orStoreError("disabling the key failed"))

const BalanceRow = Schema.Struct({ balance_micros: DbInt })

/** Adds to a balance, with a ledger row, in one transaction. Returns the new balance. */
export const topUp = (user: string, amountMicros: Micros, note: string | undefined) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = Date.now()
    return yield* sql.withTransaction(Effect.gen(function*() {
      const rows = yield* decodeRows(BalanceRow)(
        yield* sql`UPDATE users SET balance_micros = balance_micros + ${amountMicros}, balance_touched = 1,
          updated_at = ${at} WHERE name = ${user} RETURNING balance_micros`
      )
      const row = rows[0]
      if (row === undefined) return yield* new StoreError({ message: `unknown user '${user}'` })
      yield* sql`INSERT INTO balance_topups (id, user_name, amount_micros, note, at)
        VALUES (${`topup-${at}-${randomBytes(4).toString("hex")}`}, ${user}, ${amountMicros}, ${note ?? null}, ${at})`
      return row.balance_micros
    }))
  }).pipe(orStoreError("the top-up failed"))

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
