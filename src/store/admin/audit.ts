/**
 * The audit trail: one row per operator change (admin API or CLI), written in the same
 * transaction as the change, so a change without its row cannot exist.
 */
import { randomBytes } from "node:crypto"
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { DbInt, decodeRows, orStoreError } from "../rows.js"

/** Who made a change: "cli", or "admin-api" (the token does not name a person). */
export type Actor = string

export const recordAudit = Effect.fnUntraced(function*(actor: Actor, action: string, target: string, detail?: Record<string, unknown>) {
  const sql = yield* SqlClient.SqlClient
  const at = yield* Clock.currentTimeMillis
  const id = `audit-${at.toString(36)}-${randomBytes(5).toString("hex")}`
  yield* sql`INSERT INTO admin_audit (id, at, actor, action, target, detail)
    VALUES (${id}, ${at}, ${actor}, ${action}, ${target}, ${detail === undefined ? null : JSON.stringify(detail)})`
})

const AuditRow = Schema.Struct({
  id: Schema.String,
  at: DbInt,
  actor: Schema.String,
  action: Schema.String,
  target: Schema.String,
  detail: Schema.NullOr(Schema.String)
})
export type AuditRow = typeof AuditRow.Type

/** The newest `limit` rows, newest first; `target` narrows to one user, key, group... */
export const listAudit = (query: { readonly limit: number; readonly target?: string | undefined }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = query.target === undefined ? sql`1 = 1` : sql`target = ${query.target}`
    return yield* decodeRows(AuditRow)(
      yield* sql`SELECT id, at, actor, action, target, detail FROM admin_audit WHERE ${where}
        ORDER BY at DESC, id DESC LIMIT ${query.limit}`
    )
  }).pipe(orStoreError("reading the audit trail failed"))
