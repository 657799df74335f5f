/**
 * The declarative configuration file (YAML). Field names are fixed so tooling can rely on them.
 * Decoding is strict about types and names the field in every error; secrets never live here
 * (accounts name an environment variable instead).
 */
import { Schema } from "effect"
import { defaultModerationConfig, ModerationConfig, withDefault } from "./moderationConfig.js"
import { ProviderTool } from "./providerTools.js"

/** Where a group's accounts are: OpenAI Responses, Anthropic Messages, or any OpenAI-compatible Chat Completions server. */
export const Platform = Schema.Literals(["openai", "anthropic", "antigravity", "openai_chat"])
export type Platform = typeof Platform.Type

export const ModerationMode = Schema.Literals(["off", "observe", "block"])
export type ModerationMode = typeof ModerationMode.Type

const NonEmpty = Schema.String.check(Schema.isMinLength(1))
const NonNegative = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
/** A value sent as an HTTP header as it is: printable ASCII, no spaces (an id such as `org-…`). */
const HeaderToken = Schema.String.check(Schema.isPattern(/^[\x21-\x7e]{1,256}$/, {
  message: "must be 1 to 256 printable ASCII characters without spaces"
}))

/** Requests / tokens per minute, on groups, users and keys; absent = no limit. */
const MinuteLimitFields = {
  rpm_limit: Schema.optional(PositiveInt),
  tpm_limit: Schema.optional(PositiveInt)
}

export const GroupConfig = Schema.Struct({
  name: NonEmpty,
  platform: Platform,
  billing: Schema.Literals(["balance", "subscription"]).pipe(withDefault("balance")),
  allow_image_generation: Schema.Boolean.pipe(withDefault(false)),
  // Tools the upstream runs and bills per call (web_search ...): a request naming another is refused (403 tool_not_allowed).
  allow_provider_tools: Schema.Array(ProviderTool).pipe(withDefault([])),
  rate_multiplier: NonNegative.pipe(withDefault(1)),
  models: Schema.optional(Schema.Array(NonEmpty)),
  moderation: ModerationMode.pipe(withDefault("off")),
  // Subscription windows (UTC day, ISO week from Monday, calendar month); absent or 0 = no limit.
  daily_limit_usd: Schema.optional(NonNegative),
  weekly_limit_usd: Schema.optional(NonNegative),
  monthly_limit_usd: Schema.optional(NonNegative),
  ...MinuteLimitFields,
  // The Responses WebSocket transport (GET upgrade); false: the upgrade is answered 426 and clients fall back to HTTP.
  websocket: Schema.Boolean.pipe(withDefault(true))
})
export type GroupConfig = typeof GroupConfig.Type

export const UserConfig = Schema.Struct({
  name: NonEmpty,
  balance_usd: Schema.Finite.pipe(withDefault(0)),
  concurrency: PositiveInt.pipe(withDefault(5)),
  ...MinuteLimitFields
})
export type UserConfig = typeof UserConfig.Type

export const KeyStatus = Schema.Literals(["active", "disabled", "expired", "quota_exhausted"])
export type KeyStatus = typeof KeyStatus.Type

export const KeyConfig = Schema.Struct({
  key: Schema.optional(NonEmpty),
  key_sha256: Schema.optional(Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/, {
    message: "key_sha256 must be 64 lowercase hex characters"
  }))),
  user: NonEmpty,
  group: NonEmpty,
  name: Schema.optional(Schema.String),
  status: KeyStatus.pipe(withDefault("active")),
  quota_usd: Schema.optional(NonNegative),
  expires_at: Schema.optional(Schema.DateFromString),
  concurrency: Schema.optional(PositiveInt),
  ...MinuteLimitFields
})
export type KeyConfig = typeof KeyConfig.Type

export const AccountConfig = Schema.Struct({
  name: NonEmpty,
  platform: Platform,
  kind: Schema.Literals(["http", "simulator"]).pipe(withDefault("http")),
  base_url: Schema.optional(Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/, {
    message: "base_url must be an http(s) URL"
  }))),
  api_key_env: Schema.optional(Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/))),
  groups: Schema.Array(NonEmpty),
  priority: Schema.Int.pipe(withDefault(50)),
  concurrency: PositiveInt.pipe(withDefault(10)),
  model_mapping: Schema.optional(Schema.Record(Schema.String, NonEmpty)),
  // OpenAI accounts only: sent upstream as OpenAI-Organization / OpenAI-Project (src/domain/forwardHeaders.ts).
  openai_organization: Schema.optional(HeaderToken),
  openai_project: Schema.optional(HeaderToken),
  // Sent with every request to this account, for providers that need them (OpenRouter's HTTP-Referer,
  // X-Title); no secrets here (the key comes from api_key_env). The account's credential wins a clash.
  headers: Schema.optional(Schema.Record(
    Schema.String.check(Schema.isPattern(/^[A-Za-z0-9-]{1,64}$/, { message: "header names are letters, digits and '-'" })),
    Schema.String.check(Schema.isPattern(/^[\x20-\x7e]{0,1024}$/, { message: "header values are printable ASCII" }))
  ))
})
export type AccountConfig = typeof AccountConfig.Type

export const SubscriptionStatus = Schema.Literals(["active", "expired", "suspended"])
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/** A user's subscription to a `billing: subscription` group. */
export const SubscriptionConfig = Schema.Struct({
  user: NonEmpty,
  group: NonEmpty,
  starts_at: Schema.optional(Schema.DateFromString),
  expires_at: Schema.optional(Schema.DateFromString),
  status: SubscriptionStatus.pipe(withDefault("active"))
})
export type SubscriptionConfig = typeof SubscriptionConfig.Type

/**
 * A price override in USD per million tokens. `model` is an exact name or a prefix ending in `*`.
 * Omitted cache prices default to the input price (never cheaper than the uncached token).
 */
export const PriceConfig = Schema.Struct({
  model: Schema.String.check(Schema.isPattern(/^[^*]+\*?$/, {
    message: "model must be a model name or a prefix ending in a single *"
  })),
  input: NonNegative,
  output: NonNegative,
  cache_read: Schema.optional(NonNegative),
  cache_write: Schema.optional(NonNegative)
})
export type PriceConfig = typeof PriceConfig.Type

/** Per-call prices of provider tools in USD per 1000 calls; a tool left out keeps its default (domain/providerTools.ts). */
export const ToolPricesConfig = Schema.Struct({
  web_search: Schema.optional(NonNegative),
  web_fetch: Schema.optional(NonNegative),
  file_search: Schema.optional(NonNegative),
  code_interpreter: Schema.optional(NonNegative),
  code_execution: Schema.optional(NonNegative)
})
export type ToolPricesConfig = typeof ToolPricesConfig.Type

export const GatewayConfig = Schema.Struct({
  groups: Schema.Array(GroupConfig),
  users: Schema.Array(UserConfig).pipe(withDefault([])),
  keys: Schema.Array(KeyConfig).pipe(withDefault([])),
  accounts: Schema.Array(AccountConfig).pipe(withDefault([])),
  // Optional (not defaulted) so existing config literals stay valid; resolve treats absent as [].
  subscriptions: Schema.optional(Schema.Array(SubscriptionConfig)),
  prices: Schema.optional(Schema.Array(PriceConfig)),
  tool_prices: Schema.optional(ToolPricesConfig),
  /** Which moderation implementation decides, and its rules or endpoint settings. */
  moderation: ModerationConfig.pipe(withDefault(defaultModerationConfig)),
  /** Per-platform fallback model lists for /v1/models (data, not code). */
  default_models: Schema.optional(Schema.Record(Platform, Schema.optional(Schema.Array(NonEmpty))))
})
export type GatewayConfig = typeof GatewayConfig.Type
