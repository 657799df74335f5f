/**
 * The admin API's handlers: decode (done by HttpApi from AdminApi.ts), call the Admin service,
 * render rows as views. No rules live here: validation is the declaration's, policy the service's.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { Cause, Clock, Effect, Layer, Option, Redacted, SchemaIssue, type Types } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiError } from "effect/http-api"
import { AdminInvalid, AdminNotFound, AdminUnauthorized } from "../domain/adminErrors.js"
import { envelopeBody, internalError } from "../domain/envelope.js"
import { reportRange } from "../domain/usageReport.js"
import type { UsageDimension, UsageQuery } from "../store/admin/usage.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { Admin } from "./Admin.js"
import { markVerified } from "./callLog.js"
import { AdminApi, AdminAuth, AdminErrors, type UsageQueryParams } from "./AdminApi.js"
import { usageCsv } from "./csv.js"
import { accountView, auditView, balanceView, groupView, priceView, issuedView, keyView, subscriptionView, usageRowView, userView } from "./views.js"

/** The query with its defaults (by model, the 30 days up to today or up to end_date); 400 when it starts after it ends. */
const usageQuery = (params: typeof UsageQueryParams.Type): Effect.Effect<UsageQuery & { readonly by: UsageDimension }, AdminInvalid> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const range = reportRange(params.start_date, params.end_date, new Date(now))
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
  })

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
      .handle("get", ({ params }) => Effect.map(admin.getUser(params.name), userView))
      .handle("update", ({ params, payload }) =>
        Effect.map(
          admin.updateUser(params.name, { concurrency: payload.concurrency, rpmLimit: payload.rpm_limit, tpmLimit: payload.tpm_limit }),
          userView
        ))
      .handle("disable", ({ params }) => Effect.map(admin.setUserDisabled(params.name, true), userView))
      .handle("enable", ({ params }) => Effect.map(admin.setUserDisabled(params.name, false), userView))
      .handle("topUp", ({ params, payload }) =>
        Effect.map(
          admin.changeBalance(params.name, { mode: "add", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => balanceView(params.name, balance)
        ))
      .handle("setBalance", ({ params, payload }) =>
        Effect.map(
          admin.changeBalance(params.name, { mode: "set", amountMicros: payload.amount_usd, note: payload.note }),
          (balance) => balanceView(params.name, balance)
        ))
  }))

const dateOrNull = (s: string | null | undefined): Date | null | undefined =>
  s === undefined ? undefined : s === null ? null : new Date(s)

const KeysLive = HttpApiBuilder.group(AdminApi, "keys", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", ({ query }) =>
        Effect.map(
          admin.listKeys({ user: query.user, group: query.group, includeDeleted: query.include_deleted === "true" }),
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
      .handle("get", ({ params }) => Effect.map(admin.getKey(params.id), keyView))
      .handle("update", ({ params, payload }) =>
        Effect.map(
          admin.updateKey(params.id, {
            quotaMicros: payload.quota_usd,
            expiresAt: dateOrNull(payload.expires_at),
            concurrency: payload.concurrency,
            rpmLimit: payload.rpm_limit,
            tpmLimit: payload.tpm_limit
          }),
          keyView
        ))
      .handle("disable", ({ params }) => Effect.map(admin.disableKey(params.id), keyView))
      .handle("enable", ({ params }) => Effect.map(admin.enableKey(params.id), keyView))
      .handle("rotate", ({ params }) => Effect.map(admin.rotateKey(params.id), issuedView))
      .handle("delete", ({ params }) => admin.deleteKey(params.id))
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
            websocket: payload.websocket,
            providerTools: payload.allow_provider_tools
          }),
          groupView
        ))
      .handle("update", ({ params, payload }) =>
        Effect.map(
          admin.updateGroup(params.name, {
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
            ...(payload.websocket === undefined ? {} : { websocket: payload.websocket }),
            ...(payload.allow_provider_tools === undefined ? {} : { providerTools: payload.allow_provider_tools })
          }),
          groupView
        ))
  }))

/** An account key from a payload, wrapped at once so that it prints as <redacted> wherever it goes. */
const redactedOrUndefined = (key: string | undefined) => (key === undefined ? undefined : Redacted.make(key))

const AccountsLive = HttpApiBuilder.group(AdminApi, "accounts", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const scheduler = yield* Scheduler
    /** The accounts' health with what each answered for, all time, from the store's rollups. */
    const viewed = Effect.zipWith(
      scheduler.health,
      admin.usage({ by: "account", from: "0000-01-01", to: "9999-12-31" }),
      (all, rows) => {
        const usage = new Map(rows.map((r) => [r.bucket, r]))
        return all.map((h) => accountView(h, usage.get(h.account.name)))
      }
    )
    const one = (name: string) =>
      Effect.flatMap(viewed, (all) => {
        const found = all.find((a) => a.name === name)
        return found === undefined
          ? Effect.fail(new AdminNotFound({ message: `no account named '${name}'`, code: "account_not_found" }))
          : Effect.succeed(found)
      })
    return handlers
      .handle("list", () => viewed)
      .handle("create", ({ payload }) =>
        Effect.andThen(
          admin.createAccount({
            name: payload.name,
            platform: payload.platform,
            kind: payload.kind,
            baseUrl: payload.base_url,
            apiKey: redactedOrUndefined(payload.api_key),
            apiKeyEnv: payload.api_key_env,
            groups: payload.groups,
            priority: payload.priority,
            concurrency: payload.concurrency,
            modelMapping: payload.model_mapping
          }),
          one(payload.name)
        ))
      .handle("update", ({ params, payload }) =>
        Effect.andThen(
          admin.updateAccount(params.name, {
            baseUrl: payload.base_url,
            apiKey: redactedOrUndefined(payload.api_key),
            apiKeyEnv: payload.api_key_env,
            groups: payload.groups,
            priority: payload.priority,
            concurrency: payload.concurrency,
            modelMapping: payload.model_mapping
          }),
          one(params.name)
        ))
      .handle("remove", ({ params }) => admin.removeAccount(params.name))
      .handle("takeOut", ({ params }) =>
        Effect.gen(function*() {
          const before = yield* one(params.name)
          yield* scheduler.takeOut(params.name)
          yield* admin.record("account.take_out", params.name, { health: [before.health, "taken_out"] })
          return yield* one(params.name)
        }))
      .handle("reinstate", ({ params }) =>
        Effect.gen(function*() {
          const before = yield* one(params.name)
          yield* scheduler.reinstate(params.name)
          yield* admin.record("account.reinstate", params.name, { health: [before.health, "ok"] })
          return yield* one(params.name)
        }))
  }))

const SubscriptionsLive = HttpApiBuilder.group(AdminApi, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("list", ({ query }) =>
        Effect.map(admin.listSubscriptions({ user: query.user, group: query.group }), (rows) => rows.map(subscriptionView)))
      .handle("put", ({ params, payload }) =>
        Effect.map(
          admin.putSubscription(params.user, params.group, {
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
      .handle("put", ({ params, payload }) =>
        Effect.map(
          admin.putPrice(params.model, {
            input: payload.input,
            output: payload.output,
            cacheRead: payload.cache_read,
            cacheWrite: payload.cache_write
          }),
          priceView
        ))
      .handle("delete", ({ params }) => admin.deletePrice(params.model))
  }))

const UsageLive = HttpApiBuilder.group(AdminApi, "usage", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers
      .handle("report", ({ query }) =>
        Effect.flatMap(usageQuery(query), (query) =>
          Effect.map(admin.usage(query), (rows) => ({
            by: query.by,
            start_date: query.from,
            end_date: query.to,
            rows: rows.map(usageRowView)
          }))))
      .handle("csv", ({ query }) =>
        Effect.flatMap(usageQuery(query), (query) => Effect.map(admin.usage(query), (rows) => usageCsv(query.by, rows))))
  }))

const AuditLive = HttpApiBuilder.group(AdminApi, "audit", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    return handlers.handle("list", ({ query }) =>
      Effect.map(admin.audit({ limit: query.limit ?? 100, target: query.target }), (rows) => rows.map(auditView)))
  }))

/**
 * The bearer token check: SHA-256 of both sides compared in constant time, so neither the
 * token's content nor its length shows in the timing. A match is noted for the call's access
 * line (callLog.ts: the actor).
 */
const sha256 = (text: string) => createHash("sha256").update(text).digest()

export const adminAuthLayer = (token: Redacted.Redacted<string>) => {
  const expected = sha256(Redacted.value(token))
  return Layer.succeed(AdminAuth, {
    adminToken: (httpEffect, { credential }) =>
      timingSafeEqual(sha256(Redacted.value(credential)), expected)
        ? Effect.andThen(markVerified, httpEffect)
        : Effect.fail(new AdminUnauthorized({ message: "Missing or wrong admin token (Authorization: Bearer <ADMIN_TOKEN>)" }))
  })
}

/** A path segment of an issue, as the field name it stands for. */
const segment = (s: PropertyKey | { readonly key: PropertyKey }): string => String(typeof s === "object" ? s.key : s)

/** A field the endpoint does not have (payloads refuse them: AdminApi.ts) is named as such. */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) =>
    issue._tag === "UnexpectedKey" ? "not a field of this request (check its name)" : SchemaIssue.defaultLeafHook(issue)
})

/** A decoding failure as one line per issue, `field: what is wrong`, and the first field as `param`. */
export const invalidFrom = (e: HttpApiError.HttpApiSchemaError): AdminInvalid => {
  const issues = formatIssues(e.cause.issue).issues
  const path = (issue: (typeof issues)[number]) => (issue.path ?? []).map(segment).join(".")
  const first = issues[0]
  return new AdminInvalid({
    message: issues.length === 0 ? e.message : issues.map((i) => `${path(i) === "" ? "" : `${path(i)}: `}${i.message}`).join("; "),
    code: "invalid_request",
    param: first === undefined || path(first) === "" ? null : path(first)
  })
}

/**
 * A body of a type other than JSON (curl -d sends a form's; a browser form, text) is answered by
 * HttpApi as a bare 415 in plain text: here it says, in the envelope, what to send instead.
 */
const jsonOnly = (response: HttpServerResponse.HttpServerResponse) =>
  response.status !== 415
    ? Effect.succeed(response)
    : Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
      Effect.fail(
        new AdminInvalid({
          message: `the body must be JSON, sent with Content-Type: application/json (this one came as ${
            request.headers["content-type"] ?? "no type"
          })`,
          code: "invalid_request",
          param: null
        })
      ))

/**
 * A request that does not decode (body, query, path) answers 400 invalid_request in the envelope,
 * like every other admin error; a defect answers 500 in the envelope, logged.
 */
export const adminErrorsLayer = Layer.succeed(AdminErrors, (httpEffect) =>
  Effect.catchCause(Effect.flatMap(httpEffect, jsonOnly), (cause): Effect.Effect<HttpServerResponse.HttpServerResponse, AdminInvalid | Types.unhandled> => {
    const failure = Cause.findErrorOption(cause)
    if (Option.isSome(failure)) {
      const e: unknown = failure.value
      return HttpApiError.HttpApiSchemaError.is(e) && e.kind !== "Body" && e.kind !== "ResponseHeaders"
        ? Effect.fail(invalidFrom(e))
        : Effect.failCause(cause)
    }
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const envelope = internalError("admin")
    return Effect.as(
      Effect.logError("admin API defect", cause),
      HttpServerResponse.jsonUnsafe(envelopeBody(envelope), { status: envelope.status })
    )
  }))

/** The API with every group implemented; needs Admin and Scheduler (the auth and error layers are provided). */
export const adminApiLayer = (token: Redacted.Redacted<string>) =>
  HttpApiBuilder.layer(AdminApi).pipe(
    Layer.provide(Layer.mergeAll(UsersLive, KeysLive, GroupsLive, AccountsLive, SubscriptionsLive, PricesLive, UsageLive, AuditLive)),
    Layer.provide(Layer.merge(adminAuthLayer(token), adminErrorsLayer))
  )
