/**
 * Users for operators: list, create, change concurrency and minute limits, top up or set a balance. A balance change
 * writes a ledger row (balance_topups, with the signed amount) and an audit row with the change.
 *
 * A change reads the row it changes under the row's lock (lockedUser), so what it records as "before" is what its
 * write replaced: parallel changes queue on the row instead of each working from the same stale read.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { AdminConflict, AdminNotFound } from "../../domain/adminErrors.js"
import type { Micros } from "../../domain/model.js"
import { DbFlag, DbInt, DbIntOrNull, decodeRows, orStoreError } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction, storeErrorsBut } from "./tx.js"

const UserRow = Schema.Struct({
  name: Schema.String,
  balance_micros: DbInt,
  concurrency: DbInt,
  rpm_limit: DbIntOrNull,
  tpm_limit: DbIntOrNull,
  in_config: DbFlag,
  disabled_at: DbIntOrNull,
  created_at: DbInt,
  updated_at: DbInt
})
export type UserRow = typeof UserRow.Type

const COLUMNS = "name, balance_micros, concurrency, rpm_limit, tpm_limit, in_config, disabled_at, created_at, updated_at"

export const listUsers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(UserRow)(yield* sql`SELECT ${sql.unsafe(COLUMNS)} FROM users ORDER BY name`)
}).pipe(orStoreError("listing users failed"))

const userNamed = Effect.fnUntraced(function*(name: string, lock = false) {
  const sql = yield* SqlClient.SqlClient
  const select = sql`SELECT ${sql.unsafe(COLUMNS)} FROM users WHERE name = ${name}`
  const rows = yield* decodeRows(UserRow)(yield* (lock ? forUpdate(sql, select) : select))
  const row = rows[0]
  if (row === undefined) return yield* new AdminNotFound({ message: `no user named '${name}'`, code: "user_not_found" })
  return row
})

/** The user as it is, locked until the transaction ends: only inside inTransaction. */
const lockedUser = (name: string) => userNamed(name, true)

export const getUser = (name: string) => userNamed(name).pipe(storeErrorsBut("reading the user failed"))

export interface NewUser {
  readonly name: string
  readonly balanceMicros: Micros
  readonly concurrency: number
  /** Requests / tokens per minute across the user's keys; absent: no limit. */
  readonly rpmLimit?: number | undefined
  readonly tpmLimit?: number | undefined
}

/** Each field: absent leaves it; for the minute limits null removes the limit. */
export interface UserChange {
  readonly concurrency?: number | undefined
  readonly rpmLimit?: number | null | undefined
  readonly tpmLimit?: number | null | undefined
}

export const createUser = (actor: Actor, u: NewUser) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = yield* Clock.currentTimeMillis
    // The database owns a balance set here (balance_touched = 1): a config file naming the same user later does not reset it.
    const inserted = yield* sql`INSERT INTO users (name, balance_micros, config_balance_micros, balance_touched, concurrency,
        rpm_limit, tpm_limit, in_config, created_at, updated_at)
      VALUES (${u.name}, ${u.balanceMicros}, NULL, 1, ${u.concurrency}, ${u.rpmLimit ?? null}, ${u.tpmLimit ?? null}, 0, ${at}, ${at})
      ON CONFLICT (name) DO NOTHING RETURNING name`
    if (inserted.length === 0) return yield* new AdminConflict({ message: `a user named '${u.name}' already exists`, code: "user_exists" })
    yield* recordAudit(actor, "user.create", u.name, {
      balance_micros: u.balanceMicros,
      concurrency: u.concurrency,
      rpm_limit: u.rpmLimit ?? null,
      tpm_limit: u.tpmLimit ?? null
    })
    return yield* userNamed(u.name).pipe(Effect.catchTag("AdminNotFound", () => Effect.die(new Error("the user just created is gone"))))
  }), "creating the user failed")

/**
 * For a user the config file names, the file's concurrency and minute limits are applied again at
 * the next start (store/sync.ts): a change here lasts until then.
 */
export const updateUser = (actor: Actor, name: string, change: UserChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* lockedUser(name)
    const next = {
      concurrency: change.concurrency ?? before.concurrency,
      rpm_limit: change.rpmLimit === undefined ? before.rpm_limit : change.rpmLimit,
      tpm_limit: change.tpmLimit === undefined ? before.tpm_limit : change.tpmLimit
    }
    if (change.concurrency !== undefined || change.rpmLimit !== undefined || change.tpmLimit !== undefined) {
      yield* sql`UPDATE users SET concurrency = ${next.concurrency}, rpm_limit = ${next.rpm_limit}, tpm_limit = ${next.tpm_limit},
          updated_at = ${(yield* Clock.currentTimeMillis)} WHERE name = ${name}`
    }
    yield* recordAudit(actor, "user.update", name, {
      concurrency: [before.concurrency, next.concurrency],
      rpm_limit: [before.rpm_limit, next.rpm_limit],
      tpm_limit: [before.tpm_limit, next.tpm_limit]
    })
    return yield* userNamed(name)
  }), "updating the user failed")

const BalanceRow = Schema.Struct({ balance_micros: DbInt })

/**
 * `add`: the balance grows by `amountMicros` (a top-up). `set`: it becomes `amountMicros` (a
 * correction). Either way the ledger records the signed difference, in one transaction.
 */
export const changeBalance = (
  actor: Actor,
  name: string,
  change: { readonly mode: "add" | "set"; readonly amountMicros: Micros; readonly note?: string | undefined }
) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = yield* Clock.currentTimeMillis
    const before = (yield* lockedUser(name)).balance_micros
    const rows = yield* decodeRows(BalanceRow)(
      change.mode === "add"
        ? yield* sql`UPDATE users SET balance_micros = balance_micros + ${change.amountMicros}, balance_touched = 1,
            updated_at = ${at} WHERE name = ${name} RETURNING balance_micros`
        : yield* sql`UPDATE users SET balance_micros = ${change.amountMicros}, balance_touched = 1,
            updated_at = ${at} WHERE name = ${name} RETURNING balance_micros`
    )
    const after = rows[0]?.balance_micros ?? before
    yield* sql`INSERT INTO balance_topups (id, user_name, amount_micros, note, at)
      VALUES (${`topup-${at}-${randomBytes(4).toString("hex")}`}, ${name}, ${after - before}, ${change.note ?? null}, ${at})`
    yield* recordAudit(actor, change.mode === "add" ? "user.topup" : "user.set_balance", name, {
      balance_micros: [before, after],
      ...(change.note === undefined ? {} : { note: change.note })
    })
    return after
  }), "changing the balance failed")

/** Disabled, none of the user's keys is admitted (a disable outlives restarts: the file never sets it). */
export const setUserDisabled = (actor: Actor, name: string, disabled: boolean) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* lockedUser(name)
    const at = yield* Clock.currentTimeMillis
    yield* disabled
      ? sql`UPDATE users SET disabled_at = ${at}, disabled_by = ${actor}, updated_at = ${at} WHERE name = ${name}`
      : sql`UPDATE users SET disabled_at = NULL, disabled_by = NULL, updated_at = ${at} WHERE name = ${name}`
    yield* recordAudit(actor, disabled ? "user.disable" : "user.enable", name, {
      disabled: [before.disabled_at !== null, disabled]
    })
    return yield* userNamed(name)
  }), disabled ? "disabling the user failed" : "enabling the user failed")
