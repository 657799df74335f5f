/**
 * Rows as the operator sees them: the admin API's answers, and what the CLI prints with --json.
 * Money in USD, instants ISO 8601, database names (user_name) as the API's (user).
 */
import { usdOf } from "../domain/money.js"
import type { AccountRow } from "../store/admin/accounts.js"
import type { AuditRow } from "../store/admin/audit.js"
import type { GroupRow } from "../store/admin/groups.js"
import type { IssuedKey, KeyRow } from "../store/admin/keys.js"
import type { PriceRow } from "../store/admin/prices.js"
import type { SubscriptionRow } from "../store/admin/subscriptions.js"
import type { UsageRow } from "../store/admin/usage.js"
import type { UserRow } from "../store/admin/users.js"
import type { AccountHealth } from "../services/scheduler/Scheduler.js"

const iso = (ms: number) => new Date(ms).toISOString()
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms))

export const userView = (u: UserRow) => ({
  name: u.name,
  balance_usd: usdOf(u.balance_micros),
  concurrency: u.concurrency,
  rpm_limit: u.rpm_limit,
  tpm_limit: u.tpm_limit,
  in_config: u.in_config,
  disabled: u.disabled_at !== null,
  created_at: iso(u.created_at),
  updated_at: iso(u.updated_at)
})

export const keyView = (k: KeyRow) => ({
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
  rpm_limit: k.rpm_limit,
  tpm_limit: k.tpm_limit,
  source: k.source,
  created_at: iso(k.created_at),
  updated_at: iso(k.updated_at),
  last_used_at: isoOrNull(k.last_used_at)
})

export const issuedView = (issued: IssuedKey) => ({ ...keyView(issued.row), key: issued.key })

export const usageRowView = (r: UsageRow) => ({
  bucket: r.bucket,
  requests: r.requests,
  input_tokens: r.input_tokens,
  output_tokens: r.output_tokens,
  cache_read_tokens: r.cache_read_tokens,
  cache_creation_tokens: r.cache_creation_tokens,
  cache_hit_ratio: cacheHitRatio(r.input_tokens, r.cache_read_tokens),
  cost_usd: usdOf(r.cost_micros)
})

export const auditView = (a: AuditRow) => ({
  id: a.id,
  at: iso(a.at),
  actor: a.actor,
  action: a.action,
  target: a.target,
  detail: a.detail === null ? null : (JSON.parse(a.detail) as unknown)
})

/** The share of input tokens the provider read from its prompt cache; null when there were none. */
export const cacheHitRatio = (inputTokens: number, cacheReadTokens: number): number | null =>
  inputTokens > 0 ? Math.min(cacheReadTokens / inputTokens, 1) : null

const accountHealthView = (h: AccountHealth) => ({
  name: h.account.name,
  platform: h.account.platform,
  kind: h.account.kind,
  groups: h.account.groups,
  priority: h.account.priority,
  concurrency: h.account.concurrency,
  in_use: h.inUse,
  waiting: h.waiting,
  health: h.takenOut ? "taken_out" as const : h.coolingDownUntil !== undefined ? "cooling_down" as const : "ok" as const,
  cooling_down_until: h.coolingDownUntil === undefined ? null : h.coolingDownUntil.toISOString(),
  // Why it is not ok: the take-out's reason (auth_failed, billing, operator) or the cooldown's.
  health_reason: h.takenOut ? h.takeOut?.reason ?? null : h.coolingDownUntil !== undefined ? h.coolingDownReason ?? null : null,
  taken_out_since: h.takenOut && h.takeOut?.since !== undefined ? h.takeOut.since.toISOString() : null,
  taken_out_upstream_message: h.takenOut ? h.takeOut?.upstreamMessage ?? null : null,
  base_url: h.account.baseUrl,
  // Where the key comes from, never the key nor its stored form.
  key_source: h.account.keySource ?? null,
  model_mapping: h.account.modelMapping ?? null
})

/**
 * An account as the operator sees it, with the input tokens it answered for (`usage`: its row of
 * the usage by account, every gateway's, all time; none when it answered nothing) and how many of
 * them the provider read from its prompt cache.
 */
export const accountView = (h: AccountHealth, usage: UsageRow | undefined) => {
  const inputTokens = usage?.input_tokens ?? 0
  const cacheReadTokens = usage?.cache_read_tokens ?? 0
  return {
    ...accountHealthView(h),
    input_tokens: inputTokens,
    cache_read_tokens: cacheReadTokens,
    cache_hit_ratio: cacheHitRatio(inputTokens, cacheReadTokens)
  }
}

/** An account as the database holds it (the CLI's `accounts list`, which has no scheduler to ask for health). */
export const accountRowView = (a: AccountRow) => ({
  name: a.name,
  platform: a.platform,
  kind: a.kind,
  groups: a.groups,
  priority: a.priority,
  concurrency: a.concurrency,
  base_url: a.base_url,
  key_source: a.key_source,
  model_mapping: a.model_mapping,
  status: a.status,
  in_config: a.in_config
})

export const subscriptionView = (s: SubscriptionRow) => ({
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

export const balanceView = (user: string, balanceMicros: number) => ({ user, balance_usd: usdOf(balanceMicros) })

/** Stored as pico-dollars per token; shown as USD per million tokens, as the config file says them. */
export const priceView = (p: PriceRow) => ({
  model: p.model,
  input: p.input_pico / 1_000_000,
  output: p.output_pico / 1_000_000,
  cache_read: p.cache_read_pico / 1_000_000,
  cache_write: p.cache_write_pico / 1_000_000,
  in_config: p.in_config
})

export const groupView = (g: GroupRow) => ({
  name: g.name,
  platform: g.platform,
  billing: g.billing,
  allow_image_generation: g.allow_image_generation,
  rate_multiplier: g.rate_multiplier_ppm / 1_000_000,
  models: g.models,
  moderation: g.moderation,
  rpm_limit: g.rpm_limit,
  tpm_limit: g.tpm_limit,
  websocket: g.websocket,
  allow_provider_tools: g.provider_tools ?? [],
  in_config: g.in_config
})
