/**
 * The admin API's handlers: decode (done by HttpApi from AdminApi.ts), call the Admin service,
 * render rows as views. No rules live here: validation is the declaration's, policy the service's.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer, Redacted } from "effect"
import { AdminNotFound, AdminUnauthorized } from "../domain/adminErrors.js"
import { usdOf } from "../domain/money.js"
import { addDays, dayOf } from "../domain/usageReport.js"
import type { AuditRow } from "../store/admin/audit.js"
import type { IssuedKey, KeyRow } from "../store/admin/keys.js"
import type { SubscriptionRow } from "../store/admin/subscriptions.js"
import type { UsageDimension, UsageQuery, UsageRow } from "../store/admin/usage.js"
import type { UserRow } from "../store/admin/users.js"
import { type AccountHealth, Scheduler } from "../services/scheduler/Scheduler.js"
import { Admin } from "./Admin.js"
import { AdminApi, AdminAuth, type UsageQueryParams } from "./AdminApi.js"
import { usageCsv } from "./csv.js"

const iso = (ms: number) => new Date(ms).toISOString()
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms))

const userView = (u: UserRow) => ({
  name: u.name,
  balance_usd: usdOf(u.balance_micros),
  concurrency: u.concurrency,
  in_config: u.in_config,
  created_at: iso(u.created_at),
  updated_at: iso(u.updated_at)
})

const keyView = (k: KeyRow) => ({
  id: k.id,
  prefix: k.prefix,
  user: k.user_name,
  group: k.group_name,
  status: k.status,
  disabled_by: k.disabled_by,
  quota_usd: k.quota_micros === null ? null : usdOf(k.quota_micros),
  quota_used_usd: usdOf(k.quota_used_micros),
  expires_at: isoOrNull(k.expires_at),
  concurrency: k.concurrency,
  source: k.source,
  created_at: iso(k.created_at),
  updated_at: iso(k.updated_at),
  last_used_at: isoOrNull(k.last_used_at)
})

const issuedView = (issued: IssuedKey) => ({ ...keyView(issued.row), key: issued.key })

const usageRowView = (r: UsageRow) => ({
  bucket: r.bucket,
  requests: r.requests,
  input_tokens: r.input_tokens,
  output_tokens: r.output_tokens,
  cache_read_tokens: r.cache_read_tokens,
  cache_creation_tokens: r.cache_creation_tokens,
  cost_usd: usdOf(r.cost_micros)
})

const auditView = (a: AuditRow) => ({
  id: a.id,
  at: iso(a.at),
  actor: a.actor,
  action: a.action,
  target: a.target,
  detail: a.detail === null ? null : (JSON.parse(a.detail) as unknown)
})

const DEFAULT_DAYS = 30

/** The query's range with its defaults: the 30 days up to today, or up to end_date. */
const usageQuery = (params: typeof UsageQueryParams.Type): UsageQuery & { readonly by: UsageDimension } => {
  const to = params.end_date ?? dayOf(new Date())
  return {
    by: params.by ?? "model",
    from: params.start_date ?? addDays(to, -(DEFAULT_DAYS - 1)),
    to,
    key: params.key,
    user: params.user,
    group: params.group,
    model: params.model
  }
}

const UsersLive = HttpApiBuilder.group(AdminApi, "users", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", () => Effect.map(admin.listUsers, (rows) => rows.map(userView)))
      .handle("create", ({ payload }) =>
        Effect.map(
          admin.createUser({ name: payload.name, balanceMicros: payload.balance_usd ?? 0, concurrency: payload.concurrency ?? 5 }),
          userView
        ))
      .handle("get", ({ path }) => Effect.map(admin.getUser(path.name), userView))
      .handle("update", ({ path, payload }) => Effect.map(admin.updateUser(path.name, { concurrency: payload.concurrency }), userView))
      .handle("topUp", ({ path, payload }) =>
        Effect.map(
          admin.changeBalance(path.name, { mode: "add", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => ({ user: path.name, balance_usd: usdOf(balance) })
        ))
      .handle("setBalance", ({ path, payload }) =>
        Effect.map(
          admin.changeBalance(path.name, { mode: "set", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => ({ user: path.name, balance_usd: usdOf(balance) })
        ))
  }))

const dateOrNull = (s: string | null | undefined): Date | null | undefined =>
  s === undefined ? undefined : s === null ? null : new Date(s)

const KeysLive = HttpApiBuilder.group(AdminApi, "keys", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.map(
          admin.listKeys({ user: urlParams.user, group: urlParams.group, includeDeleted: urlParams.include_deleted === "true" }),
          (rows) => rows.map(keyView)
        ))
      .handle("create", ({ payload }) =>
        Effect.map(
          admin.createKey({
            user: payload.user,
            group: payload.group,
            name: payload.name,
            quotaMicros: payload.quota_usd,
            expiresAt: payload.expires_at === undefined ? undefined : new Date(payload.expires_at),
            concurrency: payload.concurrency
          }),
          issuedView
        ))
      .handle("get", ({ path }) => Effect.map(admin.getKey(path.id), keyView))
      .handle("update", ({ path, payload }) =>
        Effect.map(
          admin.updateKey(path.id, {
            quotaMicros: payload.quota_usd,
            expiresAt: dateOrNull(payload.expires_at),
            concurrency: payload.concurrency
          }),
          keyView
        ))
      .handle("disable", ({ path }) => Effect.map(admin.disableKey(path.id), keyView))
      .handle("enable", ({ path }) => Effect.map(admin.enableKey(path.id), keyView))
      .handle("rotate", ({ path }) => Effect.map(admin.rotateKey(path.id), issuedView))
      .handle("delete", ({ path }) => admin.deleteKey(path.id))
  }))

const GroupsLive = HttpApiBuilder.group(AdminApi, "groups", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers.handle("list", () =>
      Effect.map(admin.listGroups, (rows) =>
        rows.map((g) => ({
          name: g.name,
          platform: g.platform,
          billing: g.billing,
          allow_image_generation: g.allow_image_generation,
          rate_multiplier: g.rate_multiplier_ppm / 1_000_000,
          models: g.models,
          moderation: g.moderation,
          in_config: g.in_config
        }))))
  }))

const accountView = (h: AccountHealth) => ({
  name: h.account.name,
  platform: h.account.platform,
  kind: h.account.kind,
  groups: h.account.groups,
  priority: h.account.priority,
  concurrency: h.account.concurrency,
  in_use: h.inUse,
  waiting: h.waiting,
  health: h.takenOut ? "taken_out" as const : h.coolingDownUntil !== undefined ? "cooling_down" as const : "ok" as const,
  cooling_down_until: h.coolingDownUntil === undefined ? null : h.coolingDownUntil.toISOString()
})

const AccountsLive = HttpApiBuilder.group(AdminApi, "accounts", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const scheduler = yield* Scheduler
    const one = (name: string) =>
      Effect.flatMap(scheduler.health, (all) => {
        const found = all.find((h) => h.account.name === name)
        return found === undefined
          ? Effect.fail(new AdminNotFound({ message: `no account named '${name}'`, code: "account_not_found" }))
          : Effect.succeed(accountView(found))
      })
    return handlers
      .handle("list", () => Effect.map(scheduler.health, (all) => all.map(accountView)))
      .handle("reinstate", ({ path }) =>
        Effect.gen(function*() {
          const before = yield* one(path.name)
          yield* scheduler.reinstate(path.name)
          yield* admin.record("account.reinstate", path.name, { health: [before.health, "ok"] })
          return yield* one(path.name)
        }))
  }))

const subscriptionView = (s: SubscriptionRow) => ({
  user: s.user_name,
  group: s.group_name,
  status: s.status,
  starts_at: isoOrNull(s.starts_at),
  expires_at: isoOrNull(s.expires_at),
  in_config: s.in_config,
  daily_used_usd: usdOf(s.daily_used_micros),
  weekly_used_usd: usdOf(s.weekly_used_micros),
  monthly_used_usd: usdOf(s.monthly_used_micros)
})

const SubscriptionsLive = HttpApiBuilder.group(AdminApi, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.map(admin.listSubscriptions({ user: urlParams.user, group: urlParams.group }), (rows) => rows.map(subscriptionView)))
      .handle("put", ({ path, payload }) =>
        Effect.map(
          admin.putSubscription(path.user, path.group, {
            status: payload.status ?? "active",
            startsAt: dateOrNull(payload.starts_at) ?? null,
            expiresAt: dateOrNull(payload.expires_at) ?? null
          }),
          subscriptionView
        ))
  }))

const UsageLive = HttpApiBuilder.group(AdminApi, "usage", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("report", ({ urlParams }) => {
        const query = usageQuery(urlParams)
        return Effect.map(admin.usage(query), (rows) => ({
          by: query.by,
          start_date: query.from,
          end_date: query.to,
          rows: rows.map(usageRowView)
        }))
      })
      .handle("csv", ({ urlParams }) => {
        const query = usageQuery(urlParams)
        return Effect.map(admin.usage(query), (rows) => usageCsv(query.by, rows))
      })
  }))

const AuditLive = HttpApiBuilder.group(AdminApi, "audit", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers.handle("list", ({ urlParams }) =>
      Effect.map(admin.audit({ limit: urlParams.limit ?? 100, target: urlParams.target }), (rows) => rows.map(auditView)))
  }))

/**
 * The bearer token check: SHA-256 of both sides compared in constant time, so neither the
 * token's content nor its length shows in the timing.
 */
const sha256 = (text: string) => createHash("sha256").update(text).digest()

export const adminAuthLayer = (token: Redacted.Redacted<string>) => {
  const expected = sha256(Redacted.value(token))
  return Layer.succeed(AdminAuth, {
    adminToken: (presented) =>
      timingSafeEqual(sha256(Redacted.value(presented)), expected)
        ? Effect.void
        : Effect.fail(new AdminUnauthorized({ message: "Missing or wrong admin token (Authorization: Bearer <ADMIN_TOKEN>)" }))
  })
}

/** The API with every group implemented; needs Admin and the auth layer. */
export const adminApiLayer = HttpApiBuilder.api(AdminApi).pipe(
  Layer.provide(Layer.mergeAll(UsersLive, KeysLive, GroupsLive, AccountsLive, SubscriptionsLive, UsageLive, AuditLive))
)
