/**
 * The admin API, declared: groups, endpoints, payloads, answers and errors as Schemas. The
 * OpenAPI document (/openapi.json) and the docs page (/docs) are generated from this declaration,
 * and handlers.ts implements it. Money is USD (JSON numbers, or decimal strings for exactness),
 * instants ISO 8601, days YYYY-MM-DD in UTC. Every error answers in the public API's envelope.
 */
import { Effect, Result, Schema, SchemaIssue, SchemaTransformation } from "effect"
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "effect/http-api"
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
import { accountKeyProblem } from "../domain/secretBox.js"
import { ProviderTool } from "../domain/providerTools.js"
import { parseDay } from "../domain/usageReport.js"
import { VERSION } from "../domain/version.js"
import { MODEL_NAME } from "../store/admin/prices.js"
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

/** `error` on the wire as the envelope (decoded back by `fromEnvelope`), answered with `status`. */
const inEnvelope = <S extends Schema.Top>(
  error: S,
  status: number,
  fromEnvelope: (e: typeof Envelope.Type) => S["Encoded"]
) =>
  Envelope.pipe(
    Schema.decodeTo(
      error,
      SchemaTransformation.transform<S["Encoded"], typeof Envelope.Type>({
        decode: fromEnvelope,
        encode: (e) => envelopeBody(adminEnvelope(e as AdminFailure))
      })
    ),
    HttpApiSchema.status(status)
  )

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
export const StoreErrorWire = inEnvelope(StoreError, 503, (e) => ({
  _tag: "StoreError" as const,
  message: e.error.message
}))

// ---------------------------------------------------------------------------------------------
// Values

/** A USD amount, at most 6 decimals, never negative: a JSON number or a decimal string, to micro-dollars. */
export const Usd = Schema.Union([Schema.Finite, Schema.String]).pipe(
  Schema.decodeTo(
    Schema.Finite,
    SchemaTransformation.transformEffect<number, number | string>({
      decode: (input) =>
        Result.match(parseUsd(String(input), "the amount"), {
          onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }, input)),
          onSuccess: (micros) => Effect.succeed(micros)
        }),
      encode: (micros) => Effect.succeed(micros / 1_000_000)
    })
  )
).annotate({ description: "USD, at most 6 decimals (a number, or a decimal string for exactness)" })

const Name = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/)).annotate({
  description: "1-64 of A-Z a-z 0-9 _ . @ -, starting with a letter or digit"
})
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(100_000))
/** rpm_limit / tpm_limit: requests or tokens per minute, a positive whole number. */
const PerMinute = Schema.Int.check(Schema.isGreaterThan(0)).annotate({ description: "per minute, a positive whole number" })
/** In a view: null when there is no limit. */
const PerMinuteOrNone = Schema.NullOr(Schema.Int)
/** On a change: absent leaves it, null removes the limit. */
const PerMinuteChange = Schema.optionalKey(Schema.NullOr(PerMinute))
const Instant = Schema.String.check(
  Schema.makeFilter((s: string) => !Number.isNaN(Date.parse(s)) || "must be an ISO 8601 date-time, like 2026-12-31T00:00:00Z")
).annotate({ description: "ISO 8601 date-time" })
export const Day = Schema.String.check(
  Schema.makeFilter((s: string) => parseDay(s) !== undefined || "must be a day as YYYY-MM-DD")
).annotate({ description: "YYYY-MM-DD (UTC)" })

export const UserView = Schema.Struct({
  name: Schema.String,
  balance_usd: Schema.Finite,
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
  rate_multiplier: Schema.Finite,
  /** null: the platform's default models. */
  models: Schema.NullOr(Schema.Array(Schema.String)),
  moderation: Schema.String,
  rpm_limit: PerMinuteOrNone,
  tpm_limit: PerMinuteOrNone,
  /** The Responses WebSocket transport (GET upgrade) is allowed; false: the upgrade is answered 426. */
  websocket: Schema.Boolean,
  /** The provider tools (billed per call upstream: web_search ...) the group's requests may use. */
  allow_provider_tools: Schema.Array(Schema.String),
  in_config: Schema.Boolean
})

const Limit = Schema.NullOr(Usd)

/** Absent: `value` (JSON has no undefined; null is refused unless the schema takes it). */
const withDefault = <S extends Schema.Top & { readonly "DecodingServices": never }>(value: S["Type"]) =>
  Schema.withDecodingDefaultTypeKey<S>(Effect.succeed(value))

const Platform = Schema.Literals(["openai", "anthropic", "antigravity", "openai_chat"])
const Billing = Schema.Literals(["balance", "subscription"])
const Moderation = Schema.Literals(["off", "observe", "block"])
const Multiplier = Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1000 }))
/** Model names, by the rule prices are named by (store/admin/prices.ts). */
const ModelName = Schema.String.check(Schema.isPattern(MODEL_NAME)).annotate({
  description: "a model name: a letter or digit, then letters, digits and . _ - : / @ (at most 100)"
})
const Models = Schema.NullOr(Schema.Array(ModelName))

export const NewGroupPayload = Schema.Struct({
  name: Name,
  platform: Platform,
  billing: Billing.pipe(withDefault("balance")),
  allow_image_generation: Schema.Boolean.pipe(withDefault(false)),
  rate_multiplier: Multiplier.pipe(withDefault(1)),
  /** The models the group may call; absent or null: what its accounts serve. */
  models: Models.pipe(withDefault(null)),
  moderation: Moderation.pipe(withDefault("block")),
  daily_limit_usd: Limit.pipe(withDefault(null)),
  weekly_limit_usd: Limit.pipe(withDefault(null)),
  monthly_limit_usd: Limit.pipe(withDefault(null)),
  rpm_limit: Schema.NullOr(PerMinute).pipe(withDefault(null)),
  tpm_limit: Schema.NullOr(PerMinute).pipe(withDefault(null)),
  /** The Responses WebSocket transport; false: the upgrade is answered 426 and clients fall back to HTTP. */
  websocket: Schema.Boolean.pipe(withDefault(true)),
  /** Tools the upstream runs and bills per call that the group's requests may use; absent: none. */
  allow_provider_tools: Schema.Array(ProviderTool).pipe(withDefault([]))
})

export const GroupChangePayload = Schema.Struct({
  billing: Schema.optionalKey(Billing),
  allow_image_generation: Schema.optionalKey(Schema.Boolean),
  rate_multiplier: Schema.optionalKey(Multiplier),
  models: Schema.optionalKey(Models),
  moderation: Schema.optionalKey(Moderation),
  daily_limit_usd: Schema.optionalKey(Limit),
  weekly_limit_usd: Schema.optionalKey(Limit),
  monthly_limit_usd: Schema.optionalKey(Limit),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange,
  websocket: Schema.optionalKey(Schema.Boolean),
  allow_provider_tools: Schema.optionalKey(Schema.Array(ProviderTool))
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
  health: Schema.Literals(["ok", "cooling_down", "taken_out"]),
  cooling_down_until: Schema.NullOr(Schema.String),
  /** Why it is not ok: auth_failed, billing or operator for a take-out; the cooldown's reason (rate_limit_burst...). */
  health_reason: Schema.NullOr(Schema.String),
  /** When it was taken out. */
  taken_out_since: Schema.NullOr(Schema.String),
  /** What the upstream said when it refused the credential (credentials redacted). */
  taken_out_upstream_message: Schema.NullOr(Schema.String),
  base_url: Schema.String,
  /** Where its key comes from: stored (encrypted in the database), env (an environment variable), null (a simulator). Never the key. */
  key_source: Schema.NullOr(Schema.Literals(["stored", "env"])),
  model_mapping: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  /** Input tokens this account answered for, all time, every gateway's (the usage rollups by account). */
  input_tokens: Schema.Int,
  /** Of those, the ones the provider read from its prompt cache. */
  cache_read_tokens: Schema.Int,
  /** cache_read_tokens / input_tokens; null before the account served any. */
  cache_hit_ratio: Schema.NullOr(Schema.Finite)
})

const EnvName = Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)).annotate({
  description: "the name of an environment variable of the gateway holding the key; only names starting with ADMIN_ACCOUNT_ENV_PREFIX (none by default)"
})
/** The account's key itself (domain/secretBox.ts accountKeyProblem); a refusal never repeats it. */
const ApiKey = Schema.String.check(Schema.makeFilter((s: string) => accountKeyProblem(s) ?? true)).annotate({ description: "the account's key, stored encrypted (AES-256-GCM under MODELGATE_SECRET_KEY); never shown again" })
const BaseUrl = Schema.String.check(
  Schema.makeFilter((s: string) => /^https?:\/\/[^\s]+$/.test(s) || "must be an http(s) URL")
).annotate({ description: "http(s) URL of the provider's API" })
const ModelMapping = Schema.Record(Schema.String, Schema.String.check(Schema.isMinLength(1)))
const Priority = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 }))
const AccountGroups = Schema.Array(Name).check(Schema.isMinLength(1))

export const NewAccountPayload = Schema.Struct({
  name: Name,
  platform: Platform,
  kind: Schema.Literals(["http", "simulator"]).pipe(withDefault("http")),
  base_url: Schema.optionalKey(BaseUrl),
  api_key: Schema.optionalKey(ApiKey),
  api_key_env: Schema.optionalKey(EnvName),
  groups: AccountGroups,
  priority: Priority.pipe(withDefault(0)),
  concurrency: PositiveInt.pipe(withDefault(10)),
  model_mapping: Schema.optionalKey(ModelMapping)
})

export const AccountChangePayload = Schema.Struct({
  base_url: Schema.optionalKey(BaseUrl),
  api_key: Schema.optionalKey(ApiKey),
  api_key_env: Schema.optionalKey(EnvName),
  groups: Schema.optionalKey(AccountGroups),
  priority: Schema.optionalKey(Priority),
  concurrency: Schema.optionalKey(PositiveInt),
  model_mapping: Schema.optionalKey(Schema.NullOr(ModelMapping))
})

const SubscriptionStatus = Schema.Literals(["active", "expired", "suspended"])

export const SubscriptionView = Schema.Struct({
  user: Schema.String,
  group: Schema.String,
  status: SubscriptionStatus,
  starts_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  /** Named in the config file, which then owns it. */
  in_config: Schema.Boolean,
  /** Spend in the current windows (a window that has ended counts as 0 once the next spend lands). */
  daily_used_usd: Schema.Finite,
  weekly_used_usd: Schema.Finite,
  monthly_used_usd: Schema.Finite
})

export const SubscriptionPayload = Schema.Struct({
  status: Schema.optionalKey(SubscriptionStatus),
  starts_at: Schema.optionalKey(Schema.NullOr(Instant)),
  expires_at: Schema.optionalKey(Schema.NullOr(Instant))
})

/** USD per million tokens; a model name or a prefix ending in `*`. */
export const PriceView = Schema.Struct({
  model: Schema.String,
  input: Schema.Finite,
  output: Schema.Finite,
  cache_read: Schema.Finite,
  cache_write: Schema.Finite,
  /** Set by the config file, which then owns it. */
  in_config: Schema.Boolean
})

const PerMillion = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(1_000_000))

export const PricePayload = Schema.Struct({
  input: PerMillion,
  output: PerMillion,
  cache_read: Schema.optionalKey(PerMillion),
  cache_write: Schema.optionalKey(PerMillion)
})

export const BalanceView = Schema.Struct({ user: Schema.String, balance_usd: Schema.Finite })

export const KeyView = Schema.Struct({
  id: Schema.String,
  prefix: Schema.String,
  user: Schema.String,
  group: Schema.String,
  status: KeyStatus,
  disabled_by: Schema.NullOr(Schema.String),
  quota_usd: Schema.NullOr(Schema.Finite),
  quota_used_usd: Schema.Finite,
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
  /** cache_read_tokens / input_tokens (input_tokens include the cached reads); null without input tokens. */
  cache_hit_ratio: Schema.NullOr(Schema.Finite),
  cost_usd: Schema.Finite
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
  balance_usd: Schema.optionalKey(Usd),
  concurrency: Schema.optionalKey(PositiveInt),
  rpm_limit: Schema.optionalKey(PerMinute),
  tpm_limit: Schema.optionalKey(PerMinute)
})

/** Each field: absent leaves it; null removes a minute limit. */
export const UserChangePayload = Schema.Struct({
  concurrency: Schema.optionalKey(PositiveInt),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange
})

export const BalancePayload = Schema.Struct({
  amount_usd: Usd,
  note: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(500)))
})

export const NewKeyPayload = Schema.Struct({
  user: Name,
  group: Name,
  name: Schema.optionalKey(Name),
  quota_usd: Schema.optionalKey(Usd),
  expires_at: Schema.optionalKey(Instant),
  concurrency: Schema.optionalKey(PositiveInt),
  rpm_limit: Schema.optionalKey(PerMinute),
  tpm_limit: Schema.optionalKey(PerMinute)
})

/** Each field: absent leaves it, null removes the limit. */
export const KeyChangePayload = Schema.Struct({
  quota_usd: Schema.optionalKey(Schema.NullOr(Usd)),
  expires_at: Schema.optionalKey(Schema.NullOr(Instant)),
  concurrency: Schema.optionalKey(Schema.NullOr(PositiveInt)),
  rpm_limit: PerMinuteChange,
  tpm_limit: PerMinuteChange
})

const Flag = Schema.Literals(["true", "false"])

export const KeyFilter = Schema.Struct({
  user: Schema.optionalKey(Schema.String),
  group: Schema.optionalKey(Schema.String),
  include_deleted: Schema.optionalKey(Flag)
})

export const UsageQueryParams = Schema.Struct({
  by: Schema.optionalKey(UsageDimension),
  start_date: Schema.optionalKey(Day),
  end_date: Schema.optionalKey(Day),
  key: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(Schema.String),
  group: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String)
})

export const AuditQuery = Schema.Struct({
  limit: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 1000 }))),
  target: Schema.optionalKey(Schema.String)
})


// ---------------------------------------------------------------------------------------------
// Security: `Authorization: Bearer <ADMIN_TOKEN>` on every endpoint (not on /docs and
// /openapi.json, which describe the API and hold nothing secret).

// `HttpApiSecurity.bearer` declares the scheme as "Bearer": OpenAPI's HTTP schemes are compared
// lowercase by the docs page (Scalar), which then offered Basic auth's username and password.
export class AdminAuth extends HttpApiMiddleware.Service<AdminAuth>()("AdminAuth", {
  error: UnauthorizedWire,
  security: { adminToken: HttpApiSecurity.http({ scheme: "bearer" }) }
}) {}

/**
 * On every endpoint: the failures any of them may answer with. Its implementation (handlers.ts)
 * turns a request that does not decode into AdminInvalid, so it answers in the envelope too.
 */
export class AdminErrors extends HttpApiMiddleware.Service<AdminErrors>()("AdminErrors", {
  error: [InvalidWire, NotFoundWire, StoreErrorWire]
}) {}

// ---------------------------------------------------------------------------------------------
// Groups

const NamePath = { name: Schema.String }
const IdPath = { id: Schema.String }
const Created = <S extends Schema.Top>(schema: S) => schema.pipe(HttpApiSchema.status(201))
const described = (description: string) => OpenApi.annotations({ description })

export const UsersGroup = HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("list", "/admin/users", { success: Schema.Array(UserView) }),
    HttpApiEndpoint.post("create", "/admin/users", { payload: NewUserPayload, success: Created(UserView), error: ConflictWire }),
    HttpApiEndpoint.get("get", "/admin/users/:name", { params: NamePath, success: UserView, error: NotFoundWire }),
    HttpApiEndpoint.patch("update", "/admin/users/:name", {
      params: NamePath,
      payload: UserChangePayload,
      success: UserView,
      error: NotFoundWire
    }).annotateMerge(described(
      "Changes concurrency, rpm_limit, tpm_limit (null removes a limit). For a user the config file names, the file's values are applied again at the next start."
    )),
    HttpApiEndpoint.post("disable", "/admin/users/:name/disable", { params: NamePath, success: UserView, error: NotFoundWire })
      .annotateMerge(described("None of the user's keys is admitted (401 user_disabled) until the user is enabled again.")),
    HttpApiEndpoint.post("enable", "/admin/users/:name/enable", { params: NamePath, success: UserView, error: NotFoundWire }),
    HttpApiEndpoint.post("topUp", "/admin/users/:name/topup", {
      params: NamePath,
      payload: BalancePayload,
      success: BalanceView,
      error: NotFoundWire
    }).annotateMerge(described("Adds amount_usd to the balance, with a ledger row and an audit row.")),
    HttpApiEndpoint.put("setBalance", "/admin/users/:name/balance", {
      params: NamePath,
      payload: BalancePayload,
      success: BalanceView,
      error: NotFoundWire
    }).annotateMerge(described("Sets the balance to amount_usd; the ledger records the difference."))
  )
  .middleware(AdminAuth)

export const KeysGroup = HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.get("list", "/admin/keys", { query: KeyFilter, success: Schema.Array(KeyView) }),
    HttpApiEndpoint.post("create", "/admin/keys", { payload: NewKeyPayload, success: Created(IssuedKeyView), error: ConflictWire })
      .annotateMerge(described("Issues a key. The answer's `key` is the secret, shown this once.")),
    HttpApiEndpoint.get("get", "/admin/keys/:id", { params: IdPath, success: KeyView, error: NotFoundWire }),
    HttpApiEndpoint.patch("update", "/admin/keys/:id", {
      params: IdPath,
      payload: KeyChangePayload,
      success: KeyView,
      error: [NotFoundWire, ConflictWire]
    }),
    HttpApiEndpoint.post("disable", "/admin/keys/:id/disable", { params: IdPath, success: KeyView, error: NotFoundWire }),
    HttpApiEndpoint.post("enable", "/admin/keys/:id/enable", { params: IdPath, success: KeyView, error: [NotFoundWire, ConflictWire] }),
    HttpApiEndpoint.post("rotate", "/admin/keys/:id/rotate", { params: IdPath, success: IssuedKeyView, error: [NotFoundWire, ConflictWire] })
      .annotateMerge(described("A new secret for the key (shown this once); the old one stops working.")),
    HttpApiEndpoint.delete("delete", "/admin/keys/:id", { params: IdPath, success: HttpApiSchema.NoContent, error: [NotFoundWire, ConflictWire] })
      .annotateMerge(described("Disables the key and hides it from listings; its usage stays."))
  )
  .middleware(AdminAuth)

export const GroupsGroup = HttpApiGroup.make("groups")
  .add(
    HttpApiEndpoint.get("list", "/admin/groups", { success: Schema.Array(GroupView) })
      .annotateMerge(described("The groups keys can belong to.")),
    HttpApiEndpoint.post("create", "/admin/groups", { payload: NewGroupPayload, success: Created(GroupView), error: ConflictWire })
      .annotateMerge(described("Adds a group; give it accounts (POST /admin/accounts) and keys.")),
    HttpApiEndpoint.patch("update", "/admin/groups/:name", {
      params: NamePath,
      payload: GroupChangePayload,
      success: GroupView,
      error: [NotFoundWire, ConflictWire]
    }).annotateMerge(described("Changes a group added here (the platform stays); applies to the next request of its keys."))
  )
  .middleware(AdminAuth)

export const AccountsGroup = HttpApiGroup.make("accounts")
  .add(
    HttpApiEndpoint.get("list", "/admin/accounts", { success: Schema.Array(AccountView) })
      .annotateMerge(described("Upstream accounts and their health now: in flight, cooling down, taken out.")),
    HttpApiEndpoint.post("create", "/admin/accounts", { payload: NewAccountPayload, success: Created(AccountView), error: ConflictWire })
      .annotateMerge(described(
        "Adds an upstream account; the scheduler picks from it at once. An http account's key is given as api_key (stored encrypted under " +
          "MODELGATE_SECRET_KEY, never shown again), or named by api_key_env (only a variable starting with ADMIN_ACCOUNT_ENV_PREFIX)."
      )),
    HttpApiEndpoint.patch("update", "/admin/accounts/:name", {
      params: NamePath,
      payload: AccountChangePayload,
      success: AccountView,
      error: [NotFoundWire, ConflictWire]
    }).annotateMerge(described(
      "Changes an account added here. A new api_key or api_key_env replaces its key; a new base_url of an account whose key is stored needs api_key again."
    )),
    HttpApiEndpoint.delete("remove", "/admin/accounts/:name", {
      params: NamePath,
      success: HttpApiSchema.NoContent,
      error: [NotFoundWire, ConflictWire]
    }),
    HttpApiEndpoint.post("takeOut", "/admin/accounts/:name/take-out", { params: NamePath, success: AccountView, error: NotFoundWire })
      .annotateMerge(described(
        "Takes the account out of rotation until it is reinstated (shared by every instance with REDIS_URL; kept in this process otherwise)."
      )),
    HttpApiEndpoint.post("reinstate", "/admin/accounts/:name/reinstate", { params: NamePath, success: AccountView, error: NotFoundWire })
      .annotateMerge(described("Brings an account back after a take-out or a cooldown."))
  )
  .middleware(AdminAuth)

const SubscriptionPath = { user: Schema.String, group: Schema.String }

export const SubscriptionsGroup = HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.get("list", "/admin/subscriptions", {
      query: { user: Schema.optionalKey(Schema.String), group: Schema.optionalKey(Schema.String) },
      success: Schema.Array(SubscriptionView)
    }),
    HttpApiEndpoint.put("put", "/admin/subscriptions/:user/:group", {
      params: SubscriptionPath,
      payload: SubscriptionPayload,
      success: SubscriptionView,
      error: [NotFoundWire, ConflictWire]
    }).annotateMerge(described(
      "Creates or changes the user's subscription to a subscription group (status defaults to active; absent dates mean none)."
    ))
  )
  .middleware(AdminAuth)

const ModelPath = { model: Schema.String }

export const PricesGroup = HttpApiGroup.make("prices")
  .add(
    HttpApiEndpoint.get("list", "/admin/prices", { success: Schema.Array(PriceView) }),
    HttpApiEndpoint.put("put", "/admin/prices/:model", { params: ModelPath, payload: PricePayload, success: PriceView, error: ConflictWire })
      .annotateMerge(described(
        "Sets the price (USD per million tokens) of a model or a prefix ending in *; applies to settlements from now on. Omitted cache prices are the input price."
      )),
    HttpApiEndpoint.delete("delete", "/admin/prices/:model", {
      params: ModelPath,
      success: HttpApiSchema.NoContent,
      error: [NotFoundWire, ConflictWire]
    })
  )
  .middleware(AdminAuth)

export const UsageGroup = HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("report", "/admin/usage", { query: UsageQueryParams, success: UsageView })
      .annotateMerge(described("Totals per key, user, group, model or day (default: model) over a day range (default: the last 30 days).")),
    HttpApiEndpoint.get("csv", "/admin/usage.csv", {
      query: UsageQueryParams,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" }))
    }).annotateMerge(described("The same report as CSV."))
  )
  .middleware(AdminAuth)

export const AuditGroup = HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("list", "/admin/audit", { query: AuditQuery, success: Schema.Array(AuditView) })
      .annotateMerge(described("Operator changes, newest first."))
  )
  .middleware(AdminAuth)

export class AdminApi extends HttpApi.make("modelgate-admin")
  .add(UsersGroup, KeysGroup, GroupsGroup, AccountsGroup, SubscriptionsGroup, PricesGroup, UsageGroup, AuditGroup)
  .middleware(AdminErrors)
  // A field the endpoint does not have (a typo: `quota` for `quota_usd`) is refused, named, rather
  // than dropped without a word. Query strings and headers keep the default (a request carries
  // transport headers the API does not declare).
  .annotate(HttpApi.PayloadParseOptions, { onExcessProperty: "error" })
  .annotateMerge(OpenApi.annotations({
    title: "modelgate admin API",
    version: VERSION,
    description: "Users, keys, usage and the audit trail of a modelgate gateway. Changes apply to the next request."
  }))
{}
