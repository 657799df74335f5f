/**
 * The largest balance a change may leave: 2^53 - 1 µ$ (about 9 billion USD). Past it a balance is
 * no longer an exact number in JavaScript, in the JSON views, or as the drivers read it back, so a
 * top-up that would pass it is refused (400) rather than stored and read back wrong or not at all.
 */
import { SqlClient } from "effect/sql"
import { Effect, Schema } from "effect"
import { AdminInvalid } from "../domain/adminErrors.js"
import { formatUsd } from "../domain/money.js"
import type { Micros } from "../domain/model.js"
import type { Actor } from "../store/admin/audit.js"
import { forUpdate, inTransaction } from "../store/admin/tx.js"
import { DbInt, decodeRows } from "../store/rows.js"
import * as Users from "../store/admin/users.js"

export const MAX_BALANCE_MICROS: Micros = Number.MAX_SAFE_INTEGER

/** Names the amounts the operator can check (a sum past 2^53 would print rounded). */
const tooLarge = (name: string, before: Micros, amount: Micros) =>
  new AdminInvalid({
    message: `a top-up of ${formatUsd(amount)} USD would take the balance of '${name}' (${formatUsd(before)} USD) past ${
      formatUsd(MAX_BALANCE_MICROS)
    } USD, the largest amount kept exactly`,
    code: "balance_too_large",
    param: "amount_usd"
  })

const BalanceRow = Schema.Struct({ balance_micros: DbInt })

/**
 * The balance, locked until the transaction ends on PostgreSQL (SQLite's transaction holds the
 * write lock from its BEGIN), so no other change moves it between this check and the write.
 */
const lockedBalance = Effect.fnUntraced(function*(name: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(BalanceRow)(yield* forUpdate(sql, sql`SELECT balance_micros FROM users WHERE name = ${name}`))
  return rows[0]?.balance_micros
})

/**
 * A balance change (users.ts), refused when a top-up would take the balance past the largest exact
 * amount: checked under the row's lock before the write (a value past it is not even read back by
 * the PostgreSQL driver), and once more after it, in the same transaction.
 */
export const changeBalanceWithinRange = (actor: Actor, name: string, c: Parameters<typeof Users.changeBalance>[2]) =>
  inTransaction(
    Effect.gen(function*() {
      if (c.mode === "add") {
        const before = yield* lockedBalance(name)
        if (before !== undefined && before > MAX_BALANCE_MICROS - c.amountMicros) return yield* tooLarge(name, before, c.amountMicros)
      }
      const after = yield* Users.changeBalance(actor, name, c)
      if (after > MAX_BALANCE_MICROS) return yield* tooLarge(name, after - c.amountMicros, c.amountMicros)
      return after
    }),
    "changing the balance failed"
  )
