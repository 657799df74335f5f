/**
 * API keys for operators: issue (the secret is returned once; only its SHA-256 is stored), list,
 * disable, enable, rotate, change quota / expiry / concurrency / minute limits, delete (disabled and hidden: usage
 * rows keep naming it). Keys the config file names belong to the file: they may be disabled (that
 * sticks across restarts), every other change is refused as `managed_by_config`.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { keyPrefix, sha256Hex } from "../../config/resolve.js"
import { AdminConflict, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import { KeyStatus } from "../../domain/config.js"
import type { Micros } from "../../domain/model.js"
import { DbInt, DbIntOrNull, decodeRows } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction, storeErrorsBut } from "./tx.js"

export interface NewKey {
  readonly user: string
  readonly group: string
  readonly name?: string | undefined
  readonly quotaMicros?: Micros | undefined
  readonly expiresAt?: Date | undefined
  readonly concurrency?: number | undefined
  /** Requests / tokens per minute on this key; absent: no limit of its own. */
  readonly rpmLimit?: number | undefined
  readonly tpmLimit?: number | undefined
}

const KeyRow = Schema.Struct({
  id: Schema.String,
  prefix: Schema.String,
  user_name: Schema.String,
  group_name: Schema.String,
  status: KeyStatus,
  disabled_by: Schema.NullOr(Schema.String),
  quota_micros: DbIntOrNull,
  quota_used_micros: DbInt,
  expires_at: DbIntOrNull,
  concurrency: DbIntOrNull,
  rpm_limit: DbIntOrNull,
  tpm_limit: DbIntOrNull,
  source: Schema.String,
  created_at: DbInt,
  updated_at: DbInt,
  deleted_at: DbIntOrNull,
  last_used_at: DbIntOrNull
})
export type KeyRow = typeof KeyRow.Type

/** A key just issued or rotated: its row, and the secret, which is never readable again. */
export interface IssuedKey {
  readonly row: KeyRow
  readonly key: string
}

// Last use comes from the settled usage (the (key_id, at) index), so a request costs no extra write.
const SELECT = `SELECT k.id, k.prefix, k.user_name, k.group_name, k.status, k.disabled_by, k.quota_micros,
    k.quota_used_micros, k.expires_at, k.concurrency, k.rpm_limit, k.tpm_limit, k.source, k.created_at, k.updated_at, k.deleted_at,
    (SELECT MAX(e.at) FROM usage_events e WHERE e.key_id = k.id) AS last_used_at
  FROM api_keys k`

export const listKeys = (filter: {
  readonly user?: string | undefined
  readonly group?: string | undefined
  readonly includeDeleted?: boolean | undefined
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = sql.and([
      ...(filter.user === undefined ? [] : [sql`k.user_name = ${filter.user}`]),
      ...(filter.group === undefined ? [] : [sql`k.group_name = ${filter.group}`]),
      ...(filter.includeDeleted === true ? [] : [sql`k.deleted_at IS NULL`])
    ])
    return yield* decodeRows(KeyRow)(yield* sql`${sql.unsafe(SELECT)} WHERE ${where} ORDER BY k.user_name, k.id`)
  }).pipe(storeErrorsBut("listing keys failed"))

/** `lock`: the row stays locked until the transaction ends (tx.ts forUpdate), for a change that rewrites it. */
const keyNamed = Effect.fnUntraced(function*(id: string, lock = false) {
  const sql = yield* SqlClient.SqlClient
  const select = sql`${sql.unsafe(SELECT)} WHERE k.id = ${id} AND k.deleted_at IS NULL`
  const row = (yield* decodeRows(KeyRow)(yield* (lock ? forUpdate(sql, select) : select)))[0]
  if (row === undefined) return yield* new AdminNotFound({ message: `no key named '${id}'`, code: "key_not_found" })
  return row
})

export const getKey = (id: string) => keyNamed(id).pipe(storeErrorsBut("reading the key failed"))

const notFromConfig = (row: KeyRow, what: string) =>
  row.source === "config"
    ? Effect.fail(
      new AdminConflict({
        message: `key '${row.id}' comes from the config file: ${what} there (the file is applied at every start)`,
        code: "managed_by_config"
      })
    )
    : Effect.void

const exists = (table: "users" | "groups", name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT name FROM ${sql(table)} WHERE name = ${name}`).pipe(
    Effect.map((rows) => rows.length > 0)
  )

/** 32 random bytes, base64url: the secret. `sk-mg-` makes a leaked key recognisable by scanners. */
const newSecret = () => `sk-mg-${randomBytes(32).toString("base64url")}`

/** The status a key's figures call for, once an operator has (re-)enabled it or changed them. */
const liveStatus = (
  row: { readonly quota_micros: number | null; readonly quota_used_micros: number; readonly expires_at: number | null },
  now: number
) =>
  row.expires_at !== null && row.expires_at <= now
    ? "expired"
    : row.quota_micros !== null && row.quota_micros > 0 && row.quota_used_micros >= row.quota_micros
    ? "quota_exhausted"
    : "active"

export const createKey = (actor: Actor, k: NewKey) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!(yield* exists("users", k.user))) {
      return yield* new AdminInvalid({ message: `unknown user '${k.user}'`, code: "unknown_user", param: "user" })
    }
    if (!(yield* exists("groups", k.group))) {
      return yield* new AdminInvalid({ message: `unknown group '${k.group}'`, code: "unknown_group", param: "group" })
    }
    const key = newSecret()
    // Without a name, a random id: never derived from the secret (a hash prefix would help guess weak keys).
    const id = k.name ?? `key-${randomBytes(6).toString("hex")}`
    const now = yield* Clock.currentTimeMillis
    const status = liveStatus({ quota_micros: k.quotaMicros ?? null, quota_used_micros: 0, expires_at: k.expiresAt?.getTime() ?? null }, now)
    const inserted = yield* sql`INSERT INTO api_keys (id, hash, prefix, user_name, group_name, status, disabled_by, quota_micros,
        quota_used_micros, expires_at, concurrency, rpm_limit, tpm_limit, source, created_at, updated_at)
      VALUES (${id}, ${sha256Hex(key)}, ${keyPrefix(key)}, ${k.user}, ${k.group}, ${status}, NULL, ${k.quotaMicros ?? null}, 0,
        ${k.expiresAt?.getTime() ?? null}, ${k.concurrency ?? null}, ${k.rpmLimit ?? null}, ${k.tpmLimit ?? null}, ${actor},
        ${now}, ${now})
      ON CONFLICT (id) DO NOTHING RETURNING id`
    if (inserted.length === 0) return yield* new AdminConflict({ message: `a key named '${id}' already exists`, code: "key_exists" })
    yield* recordAudit(actor, "key.create", id, {
      user: k.user,
      group: k.group,
      quota_micros: k.quotaMicros ?? null,
      expires_at: k.expiresAt?.toISOString() ?? null,
      concurrency: k.concurrency ?? null,
      rpm_limit: k.rpmLimit ?? null,
      tpm_limit: k.tpmLimit ?? null
    })
    return { row: yield* keyNamed(id).pipe(Effect.catchTag("AdminNotFound", () => Effect.die(new Error("the key just created is gone")))), key } satisfies IssuedKey
  }), "creating the key failed")

/** Disabled by an operator stays disabled across restarts, even for a key the config file lists. */
export const disableKey = (actor: Actor, id: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* keyNamed(id, true)
    yield* sql`UPDATE api_keys SET status = 'disabled', disabled_by = ${actor}, updated_at = ${(yield* Clock.currentTimeMillis)} WHERE id = ${id}`
    yield* recordAudit(actor, "key.disable", id, { status: [row.status, "disabled"] })
    return yield* keyNamed(id)
  }), "disabling the key failed")

export const enableKey = (actor: Actor, id: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* keyNamed(id, true)
    if (row.status !== "disabled") {
      return yield* new AdminConflict({ message: `key '${id}' is not disabled (it is ${row.status})`, code: "key_not_disabled" })
    }
    if (row.source === "config" && row.disabled_by === "config") {
      return yield* new AdminConflict({
        message: `key '${id}' is disabled in the config file: enable it there (the file is applied at every start)`,
        code: "managed_by_config"
      })
    }
    const status = liveStatus(row, yield* Clock.currentTimeMillis)
    yield* sql`UPDATE api_keys SET status = ${status}, disabled_by = NULL, updated_at = ${(yield* Clock.currentTimeMillis)} WHERE id = ${id}`
    yield* recordAudit(actor, "key.enable", id, { status: ["disabled", status] })
    return yield* keyNamed(id)
  }), "enabling the key failed")

/** A new secret for the same key (its usage, quota and settings stay); the old secret stops working. */
export const rotateKey = (actor: Actor, id: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* keyNamed(id, true)
    yield* notFromConfig(row, "change its secret")
    const key = newSecret()
    yield* sql`UPDATE api_keys SET hash = ${sha256Hex(key)}, prefix = ${keyPrefix(key)}, updated_at = ${(yield* Clock.currentTimeMillis)} WHERE id = ${id}`
    yield* recordAudit(actor, "key.rotate", id, { prefix: [row.prefix, keyPrefix(key)] })
    return { row: yield* keyNamed(id), key } satisfies IssuedKey
  }), "rotating the key failed")

export interface KeyChange {
  /** null removes the limit. */
  readonly quotaMicros?: Micros | null | undefined
  readonly expiresAt?: Date | null | undefined
  readonly concurrency?: number | null | undefined
  readonly rpmLimit?: number | null | undefined
  readonly tpmLimit?: number | null | undefined
}

export const updateKey = (actor: Actor, id: string, change: KeyChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* keyNamed(id, true)
    yield* notFromConfig(row, "change it")
    const next = {
      quota_micros: change.quotaMicros === undefined ? row.quota_micros : change.quotaMicros,
      quota_used_micros: row.quota_used_micros,
      expires_at: change.expiresAt === undefined ? row.expires_at : change.expiresAt?.getTime() ?? null,
      concurrency: change.concurrency === undefined ? row.concurrency : change.concurrency,
      rpm_limit: change.rpmLimit === undefined ? row.rpm_limit : change.rpmLimit,
      tpm_limit: change.tpmLimit === undefined ? row.tpm_limit : change.tpmLimit
    }
    // A raised quota or a later expiry brings a key back; a disabled key stays disabled.
    const status = row.status === "disabled" ? "disabled" : liveStatus(next, yield* Clock.currentTimeMillis)
    yield* sql`UPDATE api_keys SET quota_micros = ${next.quota_micros}, expires_at = ${next.expires_at},
        concurrency = ${next.concurrency}, rpm_limit = ${next.rpm_limit}, tpm_limit = ${next.tpm_limit}, status = ${status},
        updated_at = ${(yield* Clock.currentTimeMillis)} WHERE id = ${id}`
    yield* recordAudit(actor, "key.update", id, {
      quota_micros: [row.quota_micros, next.quota_micros],
      expires_at: [row.expires_at, next.expires_at],
      concurrency: [row.concurrency, next.concurrency],
      rpm_limit: [row.rpm_limit, next.rpm_limit],
      tpm_limit: [row.tpm_limit, next.tpm_limit],
      status: [row.status, status]
    })
    return yield* keyNamed(id)
  }), "updating the key failed")

/** Disabled and hidden from listings; the row stays, since usage rows name it. */
export const deleteKey = (actor: Actor, id: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const row = yield* keyNamed(id, true)
    yield* notFromConfig(row, "remove it")
    const now = yield* Clock.currentTimeMillis
    yield* sql`UPDATE api_keys SET status = 'disabled', disabled_by = ${actor}, deleted_at = ${now}, updated_at = ${now} WHERE id = ${id}`
    yield* recordAudit(actor, "key.delete", id, { status: [row.status, "disabled"] })
  }), "deleting the key failed")
