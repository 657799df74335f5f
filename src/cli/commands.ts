/**
 * The admin commands. Each one checks its arguments first (throwing UsageError before anything
 * touches the database), then returns the Effect that does the work over the store.
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import type { AdminError } from "../domain/adminErrors.js"
import { StoreError } from "../domain/errors.js"
import { formatUsd, parseUsd } from "../domain/money.js"
import { addDays, dayOf, parseDay, usageReport } from "../domain/usageReport.js"
import { Admin } from "../admin/Admin.js"
import { openRequests, usageSummary } from "../store/admin/usage.js"
import { principalById } from "../store/queries.js"
import { loadSnapshot } from "../store/report.js"
import { type Args, onlyOptions, required, UsageError } from "./args.js"

export type Print = (line: string) => void
/** Changes go through the same Admin service as the admin API (validated, audited, announced). */
export type Command = Effect.Effect<void, StoreError | AdminError, SqlClient.SqlClient | Admin>

const table = (rows: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? []
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd())
}

const usd = (text: string, what: string): number =>
  Either.getOrThrowWith(parseUsd(text, what), (message) => new UsageError(message))

const positiveInt = (args: Args, name: string): number | undefined => {
  const raw = args.options.get(name)
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive whole number`)
  return n
}

const date = (args: Args, name: string): Date | undefined => {
  const raw = args.options.get(name)
  if (raw === undefined) return undefined
  const d = new Date(raw)
  if (Number.isNaN(d.getTime())) throw new UsageError(`--${name} must be a date, like 2026-12-31 or 2026-12-31T00:00:00Z`)
  return d
}

const day = (args: Args, name: string): string | undefined => {
  const raw = args.options.get(name)
  if (raw === undefined) return undefined
  const d = parseDay(raw)
  if (d === undefined) throw new UsageError(`--${name} must be a day as YYYY-MM-DD`)
  return d
}

export const keysCreate = (args: Args, print: Print): Command => {
  onlyOptions(args, ["user", "group", "name", "quota-usd", "expires-at", "concurrency"])
  const quota = args.options.get("quota-usd")
  const spec = {
    user: required(args, "user"),
    group: required(args, "group"),
    name: args.options.get("name"),
    quotaMicros: quota === undefined ? undefined : usd(quota, "--quota-usd"),
    expiresAt: date(args, "expires-at"),
    concurrency: positiveInt(args, "concurrency")
  }
  return Effect.map(Effect.flatMap(Admin, (admin) => admin.createKey(spec)), (issued) => {
    print(`Created key '${issued.row.id}' for user '${spec.user}' in group '${spec.group}'.`)
    print("")
    print(`  ${issued.key}`)
    print("")
    print("Store it now: it is shown only this once (the database keeps only its SHA-256).")
  })
}

export const keysList = (args: Args, print: Print): Command => {
  onlyOptions(args, ["user", "group"])
  return Effect.map(Effect.flatMap(Admin, (admin) => admin.listKeys({ user: args.options.get("user"), group: args.options.get("group") })), (rows) => {
    if (rows.length === 0) return print("No keys.")
    const lines = table([
      ["ID", "PREFIX", "USER", "GROUP", "STATUS", "QUOTA_USD", "USED_USD", "EXPIRES", "SOURCE"],
      ...rows.map((k) => [
        k.id,
        k.prefix,
        k.user_name,
        k.group_name,
        k.status,
        k.quota_micros === null ? "-" : formatUsd(k.quota_micros),
        formatUsd(k.quota_used_micros),
        k.expires_at === null ? "-" : new Date(k.expires_at).toISOString(),
        k.source
      ])
    ])
    for (const line of lines) print(line)
  })
}

export const keysDisable = (args: Args, id: string | undefined, print: Print): Command => {
  onlyOptions(args, [])
  if (id === undefined) throw new UsageError("usage: modelgate keys disable <key id>")
  return Effect.map(Effect.flatMap(Admin, (admin) => admin.disableKey(id)), () =>
    print(`Disabled key '${id}'. Running gateways refuse it within their cache TTL (1 s), at once with REDIS_URL set.`))
}

export const usersTopup = (args: Args, user: string | undefined, amount: string | undefined, print: Print): Command => {
  onlyOptions(args, ["note"])
  if (user === undefined || amount === undefined) throw new UsageError("usage: modelgate users topup <user> <usd>")
  const micros = usd(amount, "the amount")
  if (micros === 0) throw new UsageError("the amount must be more than 0")
  return Effect.map(Effect.flatMap(Admin, (admin) => admin.changeBalance(user, { mode: "add", amountMicros: micros, note: args.options.get("note") })), (balance) =>
    print(`Topped up '${user}' by ${formatUsd(micros)} USD; balance is now ${formatUsd(balance)} USD.`))
}

/** Without --key: one line per key. With --key: that key's /v1/usage body. With --open: unsettled requests. */
export const usage = (args: Args, print: Print): Command => {
  onlyOptions(args, ["key", "start-date", "end-date", "open"])
  const now = new Date()
  if (args.options.has("open")) {
    return Effect.map(openRequests, (rows) => {
      if (rows.length === 0) return print("No open requests.")
      for (const line of table([
        ["REQUEST_ID", "KEY", "MODEL", "STARTED_AT"],
        ...rows.map((r) => [r.request_id, r.key_id, r.model, new Date(r.started_at).toISOString()])
      ])) print(line)
    })
  }
  const keyId = args.options.get("key")
  if (keyId === undefined) {
    return Effect.map(usageSummary(now), (rows) => {
      if (rows.length === 0) return print("No keys.")
      for (const line of table([
        ["KEY", "USER", "GROUP", "STATUS", "TODAY_REQ", "TODAY_USD", "TOTAL_REQ", "TOTAL_USD"],
        ...rows.map((r) => [
          r.id,
          r.user_name,
          r.group_name,
          r.status,
          String(r.today_requests),
          formatUsd(r.today_cost_micros),
          String(r.total_requests),
          formatUsd(r.total_cost_micros)
        ])
      ])) print(line)
    })
  }
  const to = day(args, "end-date") ?? dayOf(now)
  const from = day(args, "start-date") ?? addDays(to, -29)
  if (from > to) throw new UsageError("--start-date must not be after --end-date")
  return Effect.gen(function*() {
    const principal = yield* principalById(keyId).pipe(
      Effect.mapError((cause) => new StoreError({ message: "reading the key failed", cause }))
    )
    if (Option.isNone(principal)) return yield* new StoreError({ message: `no key named '${keyId}'` })
    const snapshot = yield* loadSnapshot(principal.value, { from, to }, now).pipe(
      Effect.mapError((cause) => new StoreError({ message: "reading usage failed", cause }))
    )
    print(JSON.stringify(usageReport(snapshot, now), null, 2))
  })
}
