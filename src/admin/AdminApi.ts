/**
 * The admin API, declared: groups, endpoints, payloads, answers and errors as Schemas. The
 * OpenAPI document (/openapi.json) and the docs page (/docs) are generated from this declaration,
 * and handlers.ts implements it. Money is USD (JSON numbers, or decimal strings for exactness),
 * instants ISO 8601, days YYYY-MM-DD in UTC. Every error answers in the public API's envelope.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Either, ParseResult, Schema } from "effect"
import {
  AdminConflict,
  adminEnvelope,
  type AdminFailure,
  AdminInvalid,
  AdminNotFound,
  AdminUnauthorized
} from "../domain/adminErrors.js"
import { KeyStatus } from "../domain/config.js"
import { envelopeBody } from "../domain/envelope.js"
import { StoreError } from "../domain/errors.js"
import { parseUsd } from "../domain/money.js"
import { parseDay } from "../domain/usageReport.js"
import { UsageDimension } from "../store/admin/usage.js"

// ---------------------------------------------------------------------------------------------
// Errors: each class travels as the envelope `{ error: { type, message, code, param } }`.

const Envelope = Schema.Struct({
  error: Schema.Struct({
    type: Schema.String,
    message: Schema.String,
    code: Schema.String,
    param: Schema.NullOr(Schema.String)
  })
})

const inEnvelope = <A, I extends AdminFailure>(
  error: Schema.Schema<A, I>,
  status: number,
  fromEnvelope: (e: typeof Envelope.Type) => I
) =>
  Schema.transform(Envelope, Schema.encodedSchema(error), {
    strict: true,
    decode: fromEnvelope,
    encode: (e) => envelopeBody(adminEnvelope(e))
  }).pipe(Schema.compose(error), (s) => s.annotations(HttpApiSchema.annotations({ status })))

export const InvalidWire = inEnvelope(AdminInvalid, 400, (e) => ({
  _tag: "AdminInvalid" as const,
  message: e.error.message,
  code: e.error.code,
  param: e.error.param
}))
export const NotFoundWire = inEnvelope(AdminNotFound, 404, (e) => ({
  _tag: "AdminNotFound" as const,
  message: e.error.message,
  code: e.error.code
}))
export const ConflictWire = inEnvelope(AdminConflict, 409, (e) => ({
  _tag: "AdminConflict" as const,
  message: e.error.message,
  code: e.error.code
}))
export const UnauthorizedWire = inEnvelope(AdminUnauthorized, 401, (e) => ({
  _tag: "AdminUnauthorized" as const,
  message: e.error.message
}))
export const StoreErrorWire = Schema.transform(Envelope, Schema.encodedSchema(StoreError), {
  strict: true,
  decode: (e) => ({ _tag: "StoreError" as const, message: e.error.message }),
  encode: (e) => envelopeBody(adminEnvelope(e))
}).pipe(Schema.compose(StoreError), (s) => s.annotations(HttpApiSchema.annotations({ status: 503 })))

// ---------------------------------------------------------------------------------------------
// Values

/** A USD amount, at most 6 decimals, never negative: a JSON number or a decimal string, to micro-dollars. */
export const Usd = Schema.transformOrFail(Schema.Union(Schema.Number, Schema.String), Schema.Number, {
  strict: true,
  decode: (input, _, ast) =>
    Either.match(parseUsd(String(input), "the amount"), {
      onLeft: (message) => ParseResult.fail(new ParseResult.Type(ast, input, message)),
      onRight: (micros) => ParseResult.succeed(micros)
    }),
  encode: (micros) => ParseResult.succeed(micros / 1_000_000)
}).annotations({ description: "USD, at most 6 decimals (a number, or a decimal string for exactness)" })

const Name = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/),
  Schema.annotations({ description: "1-64 of A-Z a-z 0-9 _ . @ -, starting with a letter or digit" })
)
const PositiveInt = Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(100_000))
/** rpm_limit / tpm_limit: requests or tokens per minute, a positive whole number. */
const PerMinute = Schema.Int.pipe(Schema.positive(), Schema.annotations({ description: "per minute, a positive whole number" }))
/** In a view: null when there is no limit. */
const PerMinuteOrNone = Schema.NullOr(Schema.Int)
/** On a change: absent leaves it, null removes the limit. */
const PerMinuteChange = Schema.optional(Schema.NullOr(PerMinute))
const Instant = Schema.String.pipe(
  Schema.filter((s) => !Number.isNaN(Date.parse(s)) || "must be an ISO 8601 date-time, like 2026-12-31T00:00:00Z"),
  Schema.annotations({ description: "ISO 8601 date-time" })
)
export const Day = Schema.String.pipe(
  Schema.filter((s) => parseDay(s) !== undefined || "must be a day as YYYY-MM-DD"),
  Schema.annotations({ description: "YYYY-MM-DD (UTC)" })
)

export const UserView = Schema.Struct({
  name: Schema.String,
  balance_usd: Schema.Number,
  concurrency: Schema.Int,
  rpm_limit: PerMinuteOrNone,
  tpm_limit: PerMinuteOrNone,
  /** Named in the config file (which re-applies its concurrency and minute limits at every start). */
  in_config: Schema.Boolean,
  /** None of the user's keys is admitted. */
  disabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})

export const GroupView = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  billing: Schema.String,
  allow_image_generation: Schema.Boolean,
  rate_multiplier: Schema.Number,
  /** null: the platform's default models. */
  models: Schema.NullOr(Schema.Array(Schema.String)),
  moderation: Schema.String,
  rpm_limit: PerMinuteOrNone,
  tpm_limit: PerMinuteOrNone,
  /** The Responses WebSocket transport (GET upgrade) is allowed; false: the upgrade is answered 426. */
  websocket: Schema.Boolean,
  in_config: Schema.Boolean
})

const Limit = Schema.NullOr(Usd)

export const NewGroupPayload = Schema.Struct({
  name: Name,
  platform: Schema.Literal("openai", "anthropic", "antigravity"),
  billing: Schema.optionalWith(Schema.Literal("balance", "subscription"), { default: () => "balance" as const }),
  allow_image_generation: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  rate_multiplier: Schema.optionalWith(Schema.Number.pipe(Schema.finite(), Schema.between(0, 1000)), { default: () => 1 }),
  /** The models the group may call; absent or null: what its accounts serve. */
  models: Schema.optionalWith(Schema.NullOr(Schema.Array(Schema.String.pipe(Schema.minLength(1)))), { default: () => null }),
  moderation: Schema.optionalWith(Schema.Literal("off", "observe", "block"), { default: () => "block" as const }),
  daily_limit_usd: Schema.optionalWith(Limit, { default: () => null }),
  weekly_limit_usd: Schema.optionalWith(Limit, { default: () => null }),
  monthly_limit_usd: Schema.optionalWith(Limit, { default: () => null }),
  rpm_limit: Schema.optionalWith(Schema.NullOr(PerMinute), { default: () => null }),
  tpm_limit: Schema.optionalWith(Schema.NullOr(PerMinute), { default: () => null }),
  /** The Responses WebSocket transport; false: the upgrade is answered 426 and clients fall back to HTTP. */
  websocket: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

export const GroupChangePayload = Schema.Struct({
  billing: Schema.optional(Schema.Literal("balance", "subscription")),
  allow_image_generation: Schema.optional(Schema.Boolean),
  rate_multiplier: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.between(0, 1000))),
  models: Schema.optional(Schema.NullOr(Schema.Array(Schema.String.pipe(Schema.minLength(1))))),
  moderation: Schema.optional(Schema.Literal("off", "observe", "block")),
  daily_limit_usd: Schema.optional(Limit),
  weekly_limit_usd: Schema.optional(Limit),
  monthly_limit_usd: Schema.optional(Limit),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange,
  websocket: Schema.optional(Schema.Boolean)
})

export const AccountView = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  kind: Schema.String,
  groups: Schema.Array(Schema.String),
  priority: Schema.Int,
  concurrency: Schema.Int,
  in_use: Schema.Int,
  waiting: Schema.Int,
  /** ok, cooling_down (back by itself at cooling_down_until) or taken_out (its credentials were refused). */
  health: Schema.Literal("ok", "cooling_down", "taken_out"),
  cooling_down_until: Schema.NullOr(Schema.String),
  base_url: Schema.String,
  model_mapping: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.String }))
})

const EnvName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
  Schema.annotations({ description: "the name of an environment variable of the gateway (never the key itself)" })
)
const BaseUrl = Schema.String.pipe(
  Schema.filter((s) => /^https?:\/\/[^\s]+$/.test(s) || "must be an http(s) URL"),
  Schema.annotations({ description: "http(s) URL of the provider's API" })
)
const ModelMapping = Schema.Record({ key: Schema.String, value: Schema.String.pipe(Schema.minLength(1)) })

export const NewAccountPayload = Schema.Struct({
  name: Name,
  platform: Schema.Literal("openai", "anthropic", "antigravity"),
  kind: Schema.optionalWith(Schema.Literal("http", "simulator"), { default: () => "http" as const }),
  base_url: Schema.optional(BaseUrl),
  api_key_env: Schema.optional(EnvName),
  groups: Schema.Array(Name).pipe(Schema.minItems(1)),
  priority: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 1_000_000)), { default: () => 0 }),
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 10 }),
  model_mapping: Schema.optional(ModelMapping)
})

export const AccountChangePayload = Schema.Struct({
  base_url: Schema.optional(BaseUrl),
  api_key_env: Schema.optional(EnvName),
  groups: Schema.optional(Schema.Array(Name).pipe(Schema.minItems(1))),
  priority: Schema.optional(Schema.Int.pipe(Schema.between(0, 1_000_000))),
  concurrency: Schema.optional(PositiveInt),
  model_mapping: Schema.optional(Schema.NullOr(ModelMapping))
})

export const SubscriptionView = Schema.Struct({
  user: Schema.String,
  group: Schema.String,
  status: Schema.Literal("active", "expired", "suspended"),
  starts_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  /** Named in the config file, which then owns it. */
  in_config: Schema.Boolean,
  /** Spend in the current windows (a window that has ended counts as 0 once the next spend lands). */
  daily_used_usd: Schema.Number,
  weekly_used_usd: Schema.Number,
  monthly_used_usd: Schema.Number
})

export const SubscriptionPayload = Schema.Struct({
  status: Schema.optional(Schema.Literal("active", "expired", "suspended")),
  starts_at: Schema.optional(Schema.NullOr(Instant)),
  expires_at: Schema.optional(Schema.NullOr(Instant))
})

/** USD per million tokens; a model name or a prefix ending in `*`. */
export const PriceView = Schema.Struct({
  model: Schema.String,
  input: Schema.Number,
  output: Schema.Number,
  cache_read: Schema.Number,
  cache_write: Schema.Number,
  /** Set by the config file, which then owns it. */
  in_config: Schema.Boolean
})

const PerMillion = Schema.Number.pipe(Schema.finite(), Schema.nonNegative(), Schema.lessThanOrEqualTo(1_000_000))

export const PricePayload = Schema.Struct({
  input: PerMillion,
  output: PerMillion,
  cache_read: Schema.optional(PerMillion),
  cache_write: Schema.optional(PerMillion)
})

export const BalanceView = Schema.Struct({ user: Schema.String, balance_usd: Schema.Number })

export const KeyView = Schema.Struct({
  id: Schema.String,
  prefix: Schema.String,
  user: Schema.String,
  group: Schema.String,
  status: KeyStatus,
  disabled_by: Schema.NullOr(Schema.String),
  quota_usd: Schema.NullOr(Schema.Number),
  quota_used_usd: Schema.Number,
  expires_at: Schema.NullOr(Schema.String),
  concurrency: Schema.NullOr(Schema.Int),
  rpm_limit: PerMinuteOrNone,
  tpm_limit: PerMinuteOrNone,
  /** config (the file owns it), cli or admin-api. */
  source: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String)
})

/** A key just issued or rotated: `key` is the secret, shown this once (only its SHA-256 is stored). */
export const IssuedKeyView = Schema.Struct({ ...KeyView.fields, key: Schema.String })

export const UsageRowView = Schema.Struct({
  /** The key id, user, group, model or day the row totals. */
  bucket: Schema.String,
  requests: Schema.Int,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cache_read_tokens: Schema.Int,
  cache_creation_tokens: Schema.Int,
  cost_usd: Schema.Number
})

export const UsageView = Schema.Struct({
  by: UsageDimension,
  start_date: Schema.String,
  end_date: Schema.String,
  rows: Schema.Array(UsageRowView)
})

export const AuditView = Schema.Struct({
  id: Schema.String,
  at: Schema.String,
  actor: Schema.String,
  action: Schema.String,
  target: Schema.String,
  detail: Schema.NullOr(Schema.Unknown)
})

// ---------------------------------------------------------------------------------------------
// Payloads and query strings

export const NewUserPayload = Schema.Struct({
  name: Name,
  balance_usd: Schema.optional(Usd),
  concurrency: Schema.optional(PositiveInt),
  rpm_limit: Schema.optional(PerMinute),
  tpm_limit: Schema.optional(PerMinute)
})

/** Each field: absent leaves it; null removes a minute limit. */
export const UserChangePayload = Schema.Struct({
  concurrency: Schema.optional(PositiveInt),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange
})

export const BalancePayload = Schema.Struct({
  amount_usd: Usd,
  note: Schema.optional(Schema.String.pipe(Schema.maxLength(500)))
})

export const NewKeyPayload = Schema.Struct({
  user: Name,
  group: Name,
  name: Schema.optional(Name),
  quota_usd: Schema.optional(Usd),
  expires_at: Schema.optional(Instant),
  concurrency: Schema.optional(PositiveInt),
  rpm_limit: Schema.optional(PerMinute),
  tpm_limit: Schema.optional(PerMinute)
})

/** Each field: absent leaves it, null removes the limit. */
export const KeyChangePayload = Schema.Struct({
  quota_usd: Schema.optional(Schema.NullOr(Usd)),
  expires_at: Schema.optional(Schema.NullOr(Instant)),
  concurrency: Schema.optional(Schema.NullOr(PositiveInt)),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange
})

const Flag = Schema.Literal("true", "false")

export const KeyFilter = Schema.Struct({
  user: Schema.optional(Schema.String),
  group: Schema.optional(Schema.String),
  include_deleted: Schema.optional(Flag)
})

export const UsageQueryParams = Schema.Struct({
  by: Schema.optional(UsageDimension),
  start_date: Schema.optional(Day),
  end_date: Schema.optional(Day),
  key: Schema.optional(Schema.String),
  user: Schema.optional(Schema.String),
  group: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String)
})

export const AuditQuery = Schema.Struct({
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))),
  target: Schema.optional(Schema.String)
})

const NamePath = Schema.Struct({ name: Schema.String })
const IdPath = Schema.Struct({ id: Schema.String })

// ---------------------------------------------------------------------------------------------
// Security: `Authorization: Bearer <ADMIN_TOKEN>` on every endpoint (not on /docs and
// /openapi.json, which describe the API and hold nothing secret).

export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("AdminAuth", {
  failure: UnauthorizedWire,
  security: { adminToken: HttpApiSecurity.bearer }
}) {}

// ---------------------------------------------------------------------------------------------
// Groups

export const UsersGroup = HttpApiGroup.make("users")
  .add(HttpApiEndpoint.get("list", "/admin/users").addSuccess(Schema.Array(UserView)))
  .add(
    HttpApiEndpoint.post("create", "/admin/users")
      .setPayload(NewUserPayload)
      .addSuccess(UserView, { status: 201 })
      .addError(ConflictWire)
  )
  .add(HttpApiEndpoint.get("get", "/admin/users/:name").setPath(NamePath).addSuccess(UserView).addError(NotFoundWire))
  .add(
    HttpApiEndpoint.patch("update", "/admin/users/:name")
      .setPath(NamePath)
      .setPayload(UserChangePayload)
      .addSuccess(UserView)
      .addError(NotFoundWire)
      .annotate(
        OpenApi.Description,
        "Changes concurrency, rpm_limit, tpm_limit (null removes a limit). For a user the config file names, the file's values are applied again at the next start."
      )
  )
  .add(
    HttpApiEndpoint.post("disable", "/admin/users/:name/disable")
      .setPath(NamePath)
      .addSuccess(UserView)
      .addError(NotFoundWire)
      .annotate(OpenApi.Description, "None of the user's keys is admitted (401 user_disabled) until the user is enabled again.")
  )
  .add(HttpApiEndpoint.post("enable", "/admin/users/:name/enable").setPath(NamePath).addSuccess(UserView).addError(NotFoundWire))
  .add(
    HttpApiEndpoint.post("topUp", "/admin/users/:name/topup")
      .setPath(NamePath)
      .setPayload(BalancePayload)
      .addSuccess(BalanceView)
      .addError(NotFoundWire)
      .annotate(OpenApi.Description, "Adds amount_usd to the balance, with a ledger row and an audit row.")
  )
  .add(
    HttpApiEndpoint.put("setBalance", "/admin/users/:name/balance")
      .setPath(NamePath)
      .setPayload(BalancePayload)
      .addSuccess(BalanceView)
      .addError(NotFoundWire)
      .annotate(OpenApi.Description, "Sets the balance to amount_usd; the ledger records the difference.")
  )
  .middleware(AdminAuth)

export const KeysGroup = HttpApiGroup.make("keys")
  .add(HttpApiEndpoint.get("list", "/admin/keys").setUrlParams(KeyFilter).addSuccess(Schema.Array(KeyView)))
  .add(
    HttpApiEndpoint.post("create", "/admin/keys")
      .setPayload(NewKeyPayload)
      .addSuccess(IssuedKeyView, { status: 201 })
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "Issues a key. The answer's `key` is the secret, shown this once.")
  )
  .add(HttpApiEndpoint.get("get", "/admin/keys/:id").setPath(IdPath).addSuccess(KeyView).addError(NotFoundWire))
  .add(
    HttpApiEndpoint.patch("update", "/admin/keys/:id")
      .setPath(IdPath)
      .setPayload(KeyChangePayload)
      .addSuccess(KeyView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
  )
  .add(
    HttpApiEndpoint.post("disable", "/admin/keys/:id/disable").setPath(IdPath).addSuccess(KeyView).addError(NotFoundWire)
  )
  .add(
    HttpApiEndpoint.post("enable", "/admin/keys/:id/enable")
      .setPath(IdPath)
      .addSuccess(KeyView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
  )
  .add(
    HttpApiEndpoint.post("rotate", "/admin/keys/:id/rotate")
      .setPath(IdPath)
      .addSuccess(IssuedKeyView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "A new secret for the key (shown this once); the old one stops working.")
  )
  .add(
    HttpApiEndpoint.del("delete", "/admin/keys/:id")
      .setPath(IdPath)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NotFoundWire)
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "Disables the key and hides it from listings; its usage stays.")
  )
  .middleware(AdminAuth)

export const GroupsGroup = HttpApiGroup.make("groups")
  .add(
    HttpApiEndpoint.get("list", "/admin/groups")
      .addSuccess(Schema.Array(GroupView))
      .annotate(OpenApi.Description, "The groups keys can belong to.")
  )
  .add(
    HttpApiEndpoint.post("create", "/admin/groups")
      .setPayload(NewGroupPayload)
      .addSuccess(GroupView, { status: 201 })
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "Adds a group; give it accounts (POST /admin/accounts) and keys.")
  )
  .add(
    HttpApiEndpoint.patch("update", "/admin/groups/:name")
      .setPath(NamePath)
      .setPayload(GroupChangePayload)
      .addSuccess(GroupView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "Changes a group added here (the platform stays); applies to the next request of its keys.")
  )
  .middleware(AdminAuth)

export const AccountsGroup = HttpApiGroup.make("accounts")
  .add(
    HttpApiEndpoint.get("list", "/admin/accounts")
      .addSuccess(Schema.Array(AccountView))
      .annotate(OpenApi.Description, "Upstream accounts and their health now: in flight, cooling down, taken out.")
  )
  .add(
    HttpApiEndpoint.post("create", "/admin/accounts")
      .setPayload(NewAccountPayload)
      .addSuccess(AccountView, { status: 201 })
      .addError(ConflictWire)
      .annotate(
        OpenApi.Description,
        "Adds an upstream account; the scheduler picks from it at once. Its key is named by api_key_env (an environment variable of the gateway), never sent."
      )
  )
  .add(
    HttpApiEndpoint.patch("update", "/admin/accounts/:name")
      .setPath(NamePath)
      .setPayload(AccountChangePayload)
      .addSuccess(AccountView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
  )
  .add(
    HttpApiEndpoint.del("remove", "/admin/accounts/:name")
      .setPath(NamePath)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NotFoundWire)
      .addError(ConflictWire)
  )
  .add(
    HttpApiEndpoint.post("takeOut", "/admin/accounts/:name/take-out")
      .setPath(NamePath)
      .addSuccess(AccountView)
      .addError(NotFoundWire)
      .annotate(
        OpenApi.Description,
        "Takes the account out of rotation until it is reinstated (shared by every instance with REDIS_URL; kept in this process otherwise)."
      )
  )
  .add(
    HttpApiEndpoint.post("reinstate", "/admin/accounts/:name/reinstate")
      .setPath(NamePath)
      .addSuccess(AccountView)
      .addError(NotFoundWire)
      .annotate(OpenApi.Description, "Brings an account back after a take-out or a cooldown.")
  )
  .middleware(AdminAuth)

const SubscriptionPath = Schema.Struct({ user: Schema.String, group: Schema.String })

export const SubscriptionsGroup = HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.get("list", "/admin/subscriptions")
      .setUrlParams(Schema.Struct({ user: Schema.optional(Schema.String), group: Schema.optional(Schema.String) }))
      .addSuccess(Schema.Array(SubscriptionView))
  )
  .add(
    HttpApiEndpoint.put("put", "/admin/subscriptions/:user/:group")
      .setPath(SubscriptionPath)
      .setPayload(SubscriptionPayload)
      .addSuccess(SubscriptionView)
      .addError(NotFoundWire)
      .addError(ConflictWire)
      .annotate(
        OpenApi.Description,
        "Creates or changes the user's subscription to a subscription group (status defaults to active; absent dates mean none)."
      )
  )
  .middleware(AdminAuth)

const ModelPath = Schema.Struct({ model: Schema.String })

export const PricesGroup = HttpApiGroup.make("prices")
  .add(HttpApiEndpoint.get("list", "/admin/prices").addSuccess(Schema.Array(PriceView)))
  .add(
    HttpApiEndpoint.put("put", "/admin/prices/:model")
      .setPath(ModelPath)
      .setPayload(PricePayload)
      .addSuccess(PriceView)
      .addError(ConflictWire)
      .annotate(
        OpenApi.Description,
        "Sets the price (USD per million tokens) of a model or a prefix ending in *; applies to settlements from now on. Omitted cache prices are the input price."
      )
  )
  .add(
    HttpApiEndpoint.del("delete", "/admin/prices/:model")
      .setPath(ModelPath)
      .addSuccess(Schema.Void, { status: 204 })
      .addError(NotFoundWire)
      .addError(ConflictWire)
  )
  .middleware(AdminAuth)

export const UsageGroup = HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("report", "/admin/usage")
      .setUrlParams(UsageQueryParams)
      .addSuccess(UsageView)
      .annotate(OpenApi.Description, "Totals per key, user, group, model or day (default: model) over a day range (default: the last 30 days).")
  )
  .add(
    HttpApiEndpoint.get("csv", "/admin/usage.csv")
      .setUrlParams(UsageQueryParams)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/csv" }))
      .annotate(OpenApi.Description, "The same report as CSV.")
  )
  .middleware(AdminAuth)

export const AuditGroup = HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("list", "/admin/audit")
      .setUrlParams(AuditQuery)
      .addSuccess(Schema.Array(AuditView))
      .annotate(OpenApi.Description, "Operator changes, newest first.")
  )
  .middleware(AdminAuth)

export class AdminApi extends HttpApi.make("modelgate-admin")
  .add(UsersGroup)
  .add(KeysGroup)
  .add(GroupsGroup)
  .add(AccountsGroup)
  .add(SubscriptionsGroup)
  .add(PricesGroup)
  .add(UsageGroup)
  .add(AuditGroup)
  .addError(InvalidWire)
  .addError(NotFoundWire)
  .addError(StoreErrorWire)
  .annotate(OpenApi.Title, "modelgate admin API")
  .annotate(
    OpenApi.Description,
    "Users, keys, usage and the audit trail of a modelgate gateway. Changes apply to the next request."
  )
{}
