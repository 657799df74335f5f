/**
 * The admin API's handlers: decode (done by HttpApi from AdminApi.ts), call the Admin service,
 * render rows as views. No rules live here: validation is the declaration's, policy the service's.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect, Layer, Redacted } from "effect"
import { AdminInvalid, AdminNotFound, AdminUnauthorized } from "../domain/adminErrors.js"
import { reportRange } from "../domain/usageReport.js"
import type { UsageDimension, UsageQuery } from "../store/admin/usage.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { Admin } from "./Admin.js"
import { AdminApi, AdminAuth, type UsageQueryParams } from "./AdminApi.js"
import { usageCsv } from "./csv.js"
import { accountView, auditView, balanceView, groupView, priceView, issuedView, keyView, subscriptionView, usageRowView, userView } from "./views.js"

/** The query with its defaults (by model, the 30 days up to today or up to end_date); 400 when it starts after it ends. */
const usageQuery = (params: typeof UsageQueryParams.Type): Effect.Effect<UsageQuery & { readonly by: UsageDimension }, AdminInvalid> => {
  const range = reportRange(params.start_date, params.end_date, new Date())
  if (range === undefined) {
    return Effect.fail(new AdminInvalid({ message: "start_date must not be after end_date", code: "invalid_date", param: "start_date" }))
  }
  return Effect.succeed({
    by: params.by ?? "model",
    ...range,
    key: params.key,
    user: params.user,
    group: params.group,
    model: params.model
  })
}

const UsersLive = HttpApiBuilder.group(AdminApi, "users", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", () => Effect.map(admin.listUsers, (rows) => rows.map(userView)))
      .handle("create", ({ payload }) =>
        Effect.map(
          admin.createUser({
            name: payload.name,
            balanceMicros: payload.balance_usd ?? 0,
            concurrency: payload.concurrency ?? 5,
            rpmLimit: payload.rpm_limit,
            tpmLimit: payload.tpm_limit
          }),
          userView
        ))
      .handle("get", ({ path }) => Effect.map(admin.getUser(path.name), userView))
      .handle("update", ({ path, payload }) =>
        Effect.map(
          admin.updateUser(path.name, { concurrency: payload.concurrency, rpmLimit: payload.rpm_limit, tpmLimit: payload.tpm_limit }),
          userView
        ))
      .handle("disable", ({ path }) => Effect.map(admin.setUserDisabled(path.name, true), userView))
      .handle("enable", ({ path }) => Effect.map(admin.setUserDisabled(path.name, false), userView))
      .handle("topUp", ({ path, payload }) =>
        Effect.map(
          admin.changeBalance(path.name, { mode: "add", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => balanceView(path.name, balance)
        ))
      .handle("setBalance", ({ path, payload }) =>
        Effect.map(
          admin.changeBalance(path.name, { mode: "set", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => balanceView(path.name, balance)
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
            concurrency: payload.concurrency,
            rpmLimit: payload.rpm_limit,
            tpmLimit: payload.tpm_limit
          }),
          issuedView
        ))
      .handle("get", ({ path }) => Effect.map(admin.getKey(path.id), keyView))
      .handle("update", ({ path, payload }) =>
        Effect.map(
          admin.updateKey(path.id, {
            quotaMicros: payload.quota_usd,
            expiresAt: dateOrNull(payload.expires_at),
            concurrency: payload.concurrency,
            rpmLimit: payload.rpm_limit,
            tpmLimit: payload.tpm_limit
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
    return handlers
      .handle("list", () => Effect.map(admin.listGroups, (rows) => rows.map(groupView)))
      .handle("create", ({ payload }) =>
        Effect.map(
          admin.createGroup({
            name: payload.name,
            platform: payload.platform,
            billing: payload.billing,
            allowImageGeneration: payload.allow_image_generation,
            rateMultiplier: payload.rate_multiplier,
            models: payload.models,
            moderation: payload.moderation,
            dailyLimitMicros: payload.daily_limit_usd,
            weeklyLimitMicros: payload.weekly_limit_usd,
            monthlyLimitMicros: payload.monthly_limit_usd,
            rpmLimit: payload.rpm_limit,
            tpmLimit: payload.tpm_limit,
            websocket: payload.websocket
          }),
          groupView
        ))
      .handle("update", ({ path, payload }) =>
        Effect.map(
          admin.updateGroup(path.name, {
            ...(payload.billing === undefined ? {} : { billing: payload.billing }),
            ...(payload.allow_image_generation === undefined ? {} : { allowImageGeneration: payload.allow_image_generation }),
            ...(payload.rate_multiplier === undefined ? {} : { rateMultiplier: payload.rate_multiplier }),
            ...(payload.models === undefined ? {} : { models: payload.models }),
            ...(payload.moderation === undefined ? {} : { moderation: payload.moderation }),
            ...(payload.daily_limit_usd === undefined ? {} : { dailyLimitMicros: payload.daily_limit_usd }),
            ...(payload.weekly_limit_usd === undefined ? {} : { weeklyLimitMicros: payload.weekly_limit_usd }),
            ...(payload.monthly_limit_usd === undefined ? {} : { monthlyLimitMicros: payload.monthly_limit_usd }),
            ...(payload.rpm_limit === undefined ? {} : { rpmLimit: payload.rpm_limit }),
            ...(payload.tpm_limit === undefined ? {} : { tpmLimit: payload.tpm_limit }),
            ...(payload.websocket === undefined ? {} : { websocket: payload.websocket })
          }),
          groupView
        ))
  }))

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
      .handle("create", ({ payload }) =>
        Effect.zipRight(
          admin.createAccount({
            name: payload.name,
            platform: payload.platform,
            kind: payload.kind,
            baseUrl: payload.base_url,
            apiKeyEnv: payload.api_key_env,
            groups: payload.groups,
            priority: payload.priority,
            concurrency: payload.concurrency,
            modelMapping: payload.model_mapping
          }),
          one(payload.name)
        ))
      .handle("update", ({ path, payload }) =>
        Effect.zipRight(
          admin.updateAccount(path.name, {
            baseUrl: payload.base_url,
            apiKeyEnv: payload.api_key_env,
            groups: payload.groups,
            priority: payload.priority,
            concurrency: payload.concurrency,
            modelMapping: payload.model_mapping
          }),
          one(path.name)
        ))
      .handle("remove", ({ path }) => admin.removeAccount(path.name))
      .handle("takeOut", ({ path }) =>
        Effect.gen(function*() {
          const before = yield* one(path.name)
          yield* scheduler.takeOut(path.name)
          yield* admin.record("account.take_out", path.name, { health: [before.health, "taken_out"] })
          return yield* one(path.name)
        }))
      .handle("reinstate", ({ path }) =>
        Effect.gen(function*() {
          const before = yield* one(path.name)
          yield* scheduler.reinstate(path.name)
          yield* admin.record("account.reinstate", path.name, { health: [before.health, "ok"] })
          return yield* one(path.name)
        }))
  }))

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

const PricesLive = HttpApiBuilder.group(AdminApi, "prices", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", () => Effect.map(admin.listPrices, (rows) => rows.map(priceView)))
      .handle("put", ({ path, payload }) =>
        Effect.map(
          admin.putPrice(path.model, {
            input: payload.input,
            output: payload.output,
            cacheRead: payload.cache_read,
            cacheWrite: payload.cache_write
          }),
          priceView
        ))
      .handle("delete", ({ path }) => admin.deletePrice(path.model))
  }))

const UsageLive = HttpApiBuilder.group(AdminApi, "usage", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("report", ({ urlParams }) =>
        Effect.flatMap(usageQuery(urlParams), (query) =>
          Effect.map(admin.usage(query), (rows) => ({
            by: query.by,
            start_date: query.from,
            end_date: query.to,
            rows: rows.map(usageRowView)
          }))))
      .handle("csv", ({ urlParams }) =>
        Effect.flatMap(usageQuery(urlParams), (query) => Effect.map(admin.usage(query), (rows) => usageCsv(query.by, rows))))
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
  Layer.provide(Layer.mergeAll(UsersLive, KeysLive, GroupsLive, AccountsLive, SubscriptionsLive, PricesLive, UsageLive, AuditLive))
)
