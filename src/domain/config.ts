/**
 * The declarative configuration file (YAML). Field names are fixed so tooling can rely on them.
 * Decoding is strict about types and names the field in every error; secrets never live here
 * (accounts name an environment variable instead).
 */
import { Schema } from "effect"
import { defaultModerationConfig, ModerationConfig } from "./moderationConfig.js"

export const Platform = Schema.Literal("openai", "anthropic", "antigravity")
export type Platform = typeof Platform.Type

export const ModerationMode = Schema.Literal("off", "observe", "block")
export type ModerationMode = typeof ModerationMode.Type

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const NonNegative = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const PositiveInt = Schema.Number.pipe(Schema.int(), Schema.positive())
/** A value sent as an HTTP header as it is: printable ASCII, no spaces (an id such as `org-…`). */
const HeaderToken = Schema.String.pipe(Schema.pattern(/^[\x21-\x7e]{1,256}$/, {
  message: () => "must be 1 to 256 printable ASCII characters without spaces"
}))

/** Requests / tokens per minute, on groups, users and keys; absent = no limit. */
const MinuteLimitFields = {
  rpm_limit: Schema.optional(PositiveInt),
  tpm_limit: Schema.optional(PositiveInt)
}

export const GroupConfig = Schema.Struct({
  name: NonEmpty,
  platform: Platform,
  billing: Schema.optionalWith(Schema.Literal("balance", "subscription"), { default: () => "balance" as const }),
  allow_image_generation: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  rate_multiplier: Schema.optionalWith(NonNegative, { default: () => 1 }),
  models: Schema.optional(Schema.Array(NonEmpty)),
  moderation: Schema.optionalWith(ModerationMode, { default: () => "off" as const }),
  // Subscription windows (UTC day, ISO week from Monday, calendar month); absent or 0 = no limit.
  daily_limit_usd: Schema.optional(NonNegative),
  weekly_limit_usd: Schema.optional(NonNegative),
  monthly_limit_usd: Schema.optional(NonNegative),
  ...MinuteLimitFields,
  // The Responses WebSocket transport (GET upgrade, issue 19); false: the upgrade is answered 426 and clients fall back to HTTP.
  websocket: Schema.optionalWith(Schema.Boolean, { default: () => true })
})
export type GroupConfig = typeof GroupConfig.Type

export const UserConfig = Schema.Struct({
  name: NonEmpty,
  balance_usd: Schema.optionalWith(Schema.Number.pipe(Schema.finite()), { default: () => 0 }),
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 5 }),
  ...MinuteLimitFields
})
export type UserConfig = typeof UserConfig.Type

export const KeyStatus = Schema.Literal("active", "disabled", "expired", "quota_exhausted")
export type KeyStatus = typeof KeyStatus.Type

export const KeyConfig = Schema.Struct({
  key: Schema.optional(NonEmpty),
  key_sha256: Schema.optional(Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, {
    message: () => "key_sha256 must be 64 lowercase hex characters"
  }))),
  user: NonEmpty,
  group: NonEmpty,
  name: Schema.optional(Schema.String),
  status: Schema.optionalWith(KeyStatus, { default: () => "active" as const }),
  quota_usd: Schema.optional(NonNegative),
  expires_at: Schema.optional(Schema.DateFromString),
  concurrency: Schema.optional(PositiveInt),
  ...MinuteLimitFields
})
export type KeyConfig = typeof KeyConfig.Type

export const AccountConfig = Schema.Struct({
  name: NonEmpty,
  platform: Platform,
  kind: Schema.optionalWith(Schema.Literal("http", "simulator"), { default: () => "http" as const }),
  base_url: Schema.optional(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/, {
    message: () => "base_url must be an http(s) URL"
  }))),
  api_key_env: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/))),
  groups: Schema.Array(NonEmpty),
  priority: Schema.optionalWith(Schema.Number.pipe(Schema.int()), { default: () => 50 }),
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 10 }),
  model_mapping: Schema.optional(Schema.Record({ key: Schema.String, value: NonEmpty })),
  // OpenAI accounts only: sent upstream as OpenAI-Organization / OpenAI-Project (src/domain/forwardHeaders.ts).
  openai_organization: Schema.optional(HeaderToken),
  openai_project: Schema.optional(HeaderToken)
})
export type AccountConfig = typeof AccountConfig.Type

export const SubscriptionStatus = Schema.Literal("active", "expired", "suspended")
export type SubscriptionStatus = typeof SubscriptionStatus.Type

/** A user's subscription to a `billing: subscription` group. */
export const SubscriptionConfig = Schema.Struct({
  user: NonEmpty,
  group: NonEmpty,
  starts_at: Schema.optional(Schema.DateFromString),
  expires_at: Schema.optional(Schema.DateFromString),
  status: Schema.optionalWith(SubscriptionStatus, { default: () => "active" as const })
})
export type SubscriptionConfig = typeof SubscriptionConfig.Type

/**
 * A price override in USD per million tokens. `model` is an exact name or a prefix ending in `*`.
 * Omitted cache prices default to the input price (never cheaper than the uncached token).
 */
export const PriceConfig = Schema.Struct({
  model: Schema.String.pipe(Schema.pattern(/^[^*]+\*?$/, {
    message: () => "model must be a model name or a prefix ending in a single *"
  })),
  input: NonNegative,
  output: NonNegative,
  cache_read: Schema.optional(NonNegative),
  cache_write: Schema.optional(NonNegative)
})
export type PriceConfig = typeof PriceConfig.Type

export const GatewayConfig = Schema.Struct({
  groups: Schema.Array(GroupConfig),
  users: Schema.optionalWith(Schema.Array(UserConfig), { default: () => [] }),
  keys: Schema.optionalWith(Schema.Array(KeyConfig), { default: () => [] }),
  accounts: Schema.optionalWith(Schema.Array(AccountConfig), { default: () => [] }),
  // Optional (not defaulted) so existing config literals stay valid; resolve treats absent as [].
  subscriptions: Schema.optional(Schema.Array(SubscriptionConfig)),
  prices: Schema.optional(Schema.Array(PriceConfig)),
  /** Which moderation implementation decides, and its rules or endpoint settings. */
  moderation: Schema.optionalWith(ModerationConfig, { default: () => defaultModerationConfig }),
  /** Per-platform fallback model lists for /v1/models (data, not code). */
  default_models: Schema.optional(Schema.partial(Schema.Record({ key: Platform, value: Schema.Array(NonEmpty) })))
})
export type GatewayConfig = typeof GatewayConfig.Type
