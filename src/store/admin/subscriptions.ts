/**
 * Subscriptions for operators: list, and create or change one (status, start, expiry) for a user
 * and a `billing: subscription` group. Subscriptions the config file names are the file's (it
 * re-applies them at every start): changing them here is refused as `managed_by_config`. Window
 * spend is never touched.
 */
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { AdminConflict, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import { SubscriptionStatus } from "../../domain/config.js"
import { DbFlag, DbInt, DbIntOrNull, decodeRows } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction, storeErrorsBut } from "./tx.js"

const SubscriptionRow = Schema.Struct({
  user_name: Schema.String,
  group_name: Schema.String,
  status: SubscriptionStatus,
  starts_at: DbIntOrNull,
  expires_at: DbIntOrNull,
  in_config: DbFlag,
  daily_used_micros: DbInt,
  weekly_used_micros: DbInt,
  monthly_used_micros: DbInt,
  updated_at: DbInt
})
export type SubscriptionRow = typeof SubscriptionRow.Type

const SELECT = `SELECT user_name, group_name, status, starts_at, expires_at, in_config, daily_used_micros,
    weekly_used_micros, monthly_used_micros, updated_at FROM subscriptions`

export const listSubscriptions = (filter: { readonly user?: string | undefined; readonly group?: string | undefined }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = sql.and([
      ...(filter.user === undefined ? [] : [sql`user_name = ${filter.user}`]),
      ...(filter.group === undefined ? [] : [sql`group_name = ${filter.group}`])
    ])
    return yield* decodeRows(SubscriptionRow)(yield* sql`${sql.unsafe(SELECT)} WHERE ${where} ORDER BY user_name, group_name`)
  }).pipe(storeErrorsBut("listing subscriptions failed"))

export interface SubscriptionChange {
  readonly status: SubscriptionStatus
  readonly startsAt: Date | null
  readonly expiresAt: Date | null
}

const Billing = Schema.Struct({ billing: Schema.String })

/** Creates the user's subscription to the group, or changes it; returns it. */
export const putSubscription = (actor: Actor, user: string, group: string, change: SubscriptionChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if ((yield* sql`SELECT name FROM users WHERE name = ${user}`).length === 0) {
      return yield* new AdminNotFound({ message: `no user named '${user}'`, code: "user_not_found" })
    }
    const groupRow = (yield* decodeRows(Billing)(yield* sql`SELECT billing FROM groups WHERE name = ${group}`))[0]
    if (groupRow === undefined) return yield* new AdminNotFound({ message: `no group named '${group}'`, code: "group_not_found" })
    if (groupRow.billing !== "subscription") {
      return yield* new AdminInvalid({
        message: `group '${group}' bills balances, not subscriptions`,
        code: "not_a_subscription_group",
        param: "group"
      })
    }
    // Locked (on PostgreSQL) when it exists; a first subscription races only on the INSERT's conflict rule.
    const before = (yield* decodeRows(SubscriptionRow)(
      yield* forUpdate(sql, sql`${sql.unsafe(SELECT)} WHERE user_name = ${user} AND group_name = ${group}`)
    ))[0]
    if (before?.in_config === true) {
      return yield* new AdminConflict({
        message: `the subscription of '${user}' to '${group}' comes from the config file: change it there (the file is applied at every start)`,
        code: "managed_by_config"
      })
    }
    const at = yield* Clock.currentTimeMillis
    const startsAt = change.startsAt?.getTime() ?? null
    const expiresAt = change.expiresAt?.getTime() ?? null
    yield* sql`INSERT INTO subscriptions (user_name, group_name, status, starts_at, expires_at, in_config, updated_at)
      VALUES (${user}, ${group}, ${change.status}, ${startsAt}, ${expiresAt}, 0, ${at})
      ON CONFLICT (user_name, group_name) DO UPDATE SET status = excluded.status, starts_at = excluded.starts_at,
        expires_at = excluded.expires_at, updated_at = excluded.updated_at`
    yield* recordAudit(actor, before === undefined ? "subscription.create" : "subscription.update", `${user}/${group}`, {
      status: [before?.status ?? null, change.status],
      starts_at: [before?.starts_at ?? null, startsAt],
      expires_at: [before?.expires_at ?? null, expiresAt]
    })
    const after = (yield* decodeRows(SubscriptionRow)(yield* sql`${sql.unsafe(SELECT)} WHERE user_name = ${user} AND group_name = ${group}`))[0]
    if (after === undefined) return yield* Effect.die(new Error("the subscription just written is gone"))
    return after
  }), "changing the subscription failed")
