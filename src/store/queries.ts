/**
 * The reads the services make, each one query, decoded into domain values. No caching here
 * (Store.ts decides what is cached and for how long).
 */
import { SqlClient } from "effect/sql"
import { Effect, Option, Schema } from "effect"
import { KeyStatus, ModerationMode, Platform, SubscriptionStatus } from "../domain/config.js"
import type { Micros, Principal } from "../domain/model.js"
import type { PriceTable } from "../domain/pricing.js"
import type { SubscriptionFigures, WindowSpends } from "../domain/subscription.js"
import { knownProviderTools } from "../domain/providerTools.js"
import { DbFlag, DbInt, DbIntOrNull, dateOrUndefined, decodeRows, NameList } from "./rows.js"

const ModelList = Schema.NullOr(Schema.fromJsonString(Schema.Array(Schema.String)))

/** The api_keys columns every key read decodes (the lookup by hash, the admin listing). */
export const KeyColumns = {
  id: Schema.String,
  prefix: Schema.String,
  user_name: Schema.String,
  group_name: Schema.String,
  status: KeyStatus,
  quota_micros: DbIntOrNull,
  quota_used_micros: DbInt,
  expires_at: DbIntOrNull
}

const PrincipalRow = Schema.Struct({
  ...KeyColumns,
  hash: Schema.String,
  concurrency: DbIntOrNull,
  rpm_limit: DbIntOrNull,
  tpm_limit: DbIntOrNull,
  balance_micros: DbInt,
  user_concurrency: DbInt,
  user_disabled_at: DbIntOrNull,
  user_rpm_limit: DbIntOrNull,
  user_tpm_limit: DbIntOrNull,
  platform: Platform,
  billing: Schema.Literals(["balance", "subscription"]),
  allow_image_generation: DbFlag,
  rate_multiplier_ppm: DbInt,
  models: ModelList,
  moderation: ModerationMode,
  group_rpm_limit: DbIntOrNull,
  group_tpm_limit: DbIntOrNull,
  group_websocket: DbFlag,
  group_provider_tools: NameList
})

const toPrincipal = (r: typeof PrincipalRow.Type): Principal => ({
  key: {
    id: r.id,
    sha256: r.hash,
    prefix: r.prefix,
    userName: r.user_name,
    groupName: r.group_name,
    status: r.status,
    quotaMicros: r.quota_micros ?? undefined,
    quotaUsedMicros: r.quota_used_micros,
    expiresAt: dateOrUndefined(r.expires_at),
    concurrency: r.concurrency ?? undefined,
    rpmLimit: r.rpm_limit ?? undefined,
    tpmLimit: r.tpm_limit ?? undefined
  },
  user: {
    name: r.user_name,
    balanceMicros: r.balance_micros,
    concurrency: r.user_concurrency,
    disabled: r.user_disabled_at !== null,
    rpmLimit: r.user_rpm_limit ?? undefined,
    tpmLimit: r.user_tpm_limit ?? undefined
  },
  group: {
    name: r.group_name,
    platform: r.platform,
    billing: r.billing,
    allowImageGeneration: r.allow_image_generation,
    rateMultiplier: r.rate_multiplier_ppm / 1_000_000,
    models: r.models ?? undefined,
    moderation: r.moderation,
    rpmLimit: r.group_rpm_limit ?? undefined,
    tpmLimit: r.group_tpm_limit ?? undefined,
    websocket: r.group_websocket,
    allowProviderTools: knownProviderTools(r.group_provider_tools ?? [])
  }
})

const principalWhere = Effect.fnUntraced(function*(column: "hash" | "id", value: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT k.id, k.hash, k.prefix, k.user_name, k.group_name, k.status, k.quota_micros,
      k.quota_used_micros, k.expires_at, k.concurrency, k.rpm_limit, k.tpm_limit, u.balance_micros,
      u.concurrency AS user_concurrency, u.disabled_at AS user_disabled_at, u.rpm_limit AS user_rpm_limit,
      u.tpm_limit AS user_tpm_limit,
      g.platform, g.billing, g.allow_image_generation, g.rate_multiplier_ppm, g.models, g.moderation,
      g.rpm_limit AS group_rpm_limit, g.tpm_limit AS group_tpm_limit, g.websocket AS group_websocket,
      g.provider_tools AS group_provider_tools
    FROM api_keys k
    JOIN users u ON u.name = k.user_name
    JOIN groups g ON g.name = k.group_name
    WHERE ${sql(`k.${column}`)} = ${value}`
  const decoded = yield* decodeRows(PrincipalRow)(rows)
  return Option.map(Option.fromNullishOr(decoded[0]), toPrincipal)
})

export const principalByHash = (sha256: string) => principalWhere("hash", sha256)
export const principalById = (id: string) => principalWhere("id", id)

const KeyFiguresRow = Schema.Struct({ status: KeyStatus, quota_used_micros: DbInt })

export interface KeyFigures {
  readonly status: KeyStatus
  readonly quotaUsedMicros: Micros
}

export const keyFigures = Effect.fnUntraced(function*(id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(KeyFiguresRow)(yield* sql`SELECT status, quota_used_micros FROM api_keys WHERE id = ${id}`)
  return Option.map(Option.fromNullishOr(rows[0]), (r): KeyFigures => ({ status: r.status, quotaUsedMicros: r.quota_used_micros }))
})

const BalanceRow = Schema.Struct({ balance_micros: DbInt })

export const balanceOf = Effect.fnUntraced(function*(user: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(BalanceRow)(yield* sql`SELECT balance_micros FROM users WHERE name = ${user}`)
  return rows[0]?.balance_micros ?? 0
})

export const SpendRow = Schema.Struct({
  daily_start: DbInt,
  daily_used_micros: DbInt,
  weekly_start: DbInt,
  weekly_used_micros: DbInt,
  monthly_start: DbInt,
  monthly_used_micros: DbInt
})

export const spendsOf = (r: typeof SpendRow.Type): WindowSpends => ({
  daily: { start: r.daily_start, usedMicros: r.daily_used_micros },
  weekly: { start: r.weekly_start, usedMicros: r.weekly_used_micros },
  monthly: { start: r.monthly_start, usedMicros: r.monthly_used_micros }
})

const SubscriptionRow = SpendRow.pipe(Schema.fieldsAssign({
    user_name: Schema.String,
    group_name: Schema.String,
    status: SubscriptionStatus,
    starts_at: DbIntOrNull,
    expires_at: DbIntOrNull,
    daily_limit_micros: DbIntOrNull,
    weekly_limit_micros: DbIntOrNull,
    monthly_limit_micros: DbIntOrNull
  })
)

const positive = (n: number | null): Micros | undefined => (n === null || n <= 0 ? undefined : n)

/** The user's subscription to the group with the group's window limits; none when there is no row. */
export const subscriptionOf = Effect.fnUntraced(function*(user: string, group: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(SubscriptionRow)(
    yield* sql`SELECT s.user_name, s.group_name, s.status, s.starts_at, s.expires_at, s.daily_start,
        s.daily_used_micros, s.weekly_start, s.weekly_used_micros, s.monthly_start, s.monthly_used_micros,
        g.daily_limit_micros, g.weekly_limit_micros, g.monthly_limit_micros
      FROM subscriptions s JOIN groups g ON g.name = s.group_name
      WHERE s.user_name = ${user} AND s.group_name = ${group}`
  )
  return Option.map(Option.fromNullishOr(rows[0]), (r): SubscriptionFigures => ({
    subscription: {
      userName: r.user_name,
      groupName: r.group_name,
      status: r.status,
      startsAt: dateOrUndefined(r.starts_at),
      expiresAt: dateOrUndefined(r.expires_at)
    },
    limits: {
      daily: positive(r.daily_limit_micros),
      weekly: positive(r.weekly_limit_micros),
      monthly: positive(r.monthly_limit_micros)
    },
    spends: spendsOf(r)
  }))
})

const PriceRow = Schema.Struct({
  model: Schema.String,
  input_pico: DbInt,
  output_pico: DbInt,
  cache_read_pico: DbInt,
  cache_write_pico: DbInt
})

/** The configured overrides, back in USD per million tokens (pico per token / 10^6 is exact to 6 decimals). */
export const priceOverrides = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(PriceRow)(
    yield* sql`SELECT model, input_pico, output_pico, cache_read_pico, cache_write_pico FROM prices`
  )
  return rows.map((r) => ({
    model: r.model,
    price: {
      input: r.input_pico / 1e6,
      output: r.output_pico / 1e6,
      cacheRead: r.cache_read_pico / 1e6,
      cacheWrite: r.cache_write_pico / 1e6
    }
  })) satisfies PriceTable
})
