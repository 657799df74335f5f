/**
 * The YAML configuration synced into the database at start, in one transaction. Rows are created or
 * updated by name; nothing is deleted (history is never rewritten): a key that left the file is
 * disabled, a subscription suspended, a user/group/account marked as no longer in the file.
 *
 * Balances: `balance_usd` is an initial balance. It is applied while the user's balance is
 * untouched; after the first settlement or top-up the database owns it (top-ups via the CLI).
 */
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import type { GatewayData } from "../config/resolve.js"
import { StoreError } from "../domain/errors.js"
import type { ApiKey } from "../domain/model.js"
import { picoPerToken, ppm } from "../domain/pricing.js"
import { dialectOf } from "./client.js"
import { DbFlag, DbInt, DbIntOrNull, decodeRows, epochOrNull, flag, orStoreError, toolList } from "./rows.js"

export interface SyncReport {
  /** Things an operator should know (a balance the file no longer controls, a key kept disabled). */
  readonly notes: ReadonlyArray<string>
}

const ExistingKey = Schema.Struct({
  id: Schema.String,
  hash: Schema.String,
  source: Schema.String,
  status: Schema.String,
  disabled_by: Schema.NullOr(Schema.String),
  quota_used_micros: DbInt
})

const ExistingUser = Schema.Struct({
  name: Schema.String,
  balance_micros: DbInt,
  config_balance_micros: DbIntOrNull,
  balance_touched: DbFlag
})

const Name = Schema.Struct({ name: Schema.String })

/** The advisory lock config syncs serialise on (instances starting together on PostgreSQL). */
const SYNC_LOCK = 7_460_227_002

// Rows are written in sorted order, like the settlement writer, so a sync on one instance and
// settlements on another lock rows in the same order and cannot deadlock.
const byName = <A>(xs: Iterable<A>, name: (a: A) => string): Array<A> =>
  [...xs].sort((a, b) => (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0))
const SubId = Schema.Struct({ user_name: Schema.String, group_name: Schema.String })

/** The `disabled_by` of a key an operator disabled (the actor the admin operations record). */
const OPERATORS: ReadonlySet<string> = new Set(["cli", "admin-api"])

/** The status a config key gets, given what the database already knows about it. */
const keyStatus = (key: ApiKey, existing: typeof ExistingKey.Type | undefined) => {
  if (key.status === "disabled") return { status: "disabled", disabledBy: "config" as string | null }
  // A disable by an operator (CLI, admin API) outlives restarts: the file does not silently re-enable the key.
  if (existing?.status === "disabled" && existing.disabled_by !== null && OPERATORS.has(existing.disabled_by)) {
    return { status: "disabled", disabledBy: existing.disabled_by }
  }
  if (key.status === "expired") return { status: "expired", disabledBy: null }
  const used = existing?.quota_used_micros ?? 0
  const exhausted = key.status === "quota_exhausted" ||
    (key.quotaMicros !== undefined && key.quotaMicros > 0 && used >= key.quotaMicros)
  return { status: exhausted ? "quota_exhausted" : "active", disabledBy: null }
}

export const syncConfig = (data: GatewayData, now?: Date) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const at = now === undefined ? yield* Clock.currentTimeMillis : now.getTime()
    const notes: Array<string> = []

    const run = Effect.gen(function*() {
      if (dialectOf(sql) === "pg") yield* sql`SELECT pg_advisory_xact_lock(${SYNC_LOCK})`
      // Tables in the settlement writer's order too (users, subscriptions, keys).
      // groups
      for (const g of byName(data.groups.values(), (g) => g.name)) {
        const limits = data.windowLimits.get(g.name)
        yield* sql`INSERT INTO groups (name, platform, billing, allow_image_generation, rate_multiplier_ppm, models,
            moderation, daily_limit_micros, weekly_limit_micros, monthly_limit_micros, rpm_limit, tpm_limit, websocket,
            provider_tools, in_config, updated_at)
          VALUES (${g.name}, ${g.platform}, ${g.billing}, ${flag(g.allowImageGeneration)}, ${Number(ppm(g.rateMultiplier))},
            ${g.models === undefined ? null : JSON.stringify(g.models)}, ${g.moderation}, ${limits?.daily ?? null},
            ${limits?.weekly ?? null}, ${limits?.monthly ?? null}, ${g.rpmLimit ?? null}, ${g.tpmLimit ?? null},
            ${flag(g.websocket ?? true)}, ${toolList(g.allowProviderTools)}, 1, ${at})
          ON CONFLICT (name) DO UPDATE SET platform = excluded.platform, billing = excluded.billing,
            allow_image_generation = excluded.allow_image_generation, rate_multiplier_ppm = excluded.rate_multiplier_ppm,
            models = excluded.models, moderation = excluded.moderation, daily_limit_micros = excluded.daily_limit_micros,
            weekly_limit_micros = excluded.weekly_limit_micros, monthly_limit_micros = excluded.monthly_limit_micros,
            rpm_limit = excluded.rpm_limit, tpm_limit = excluded.tpm_limit, websocket = excluded.websocket,
            provider_tools = excluded.provider_tools, in_config = 1,
            updated_at = excluded.updated_at`
      }
      const groupRows = yield* decodeRows(Name)(yield* sql`SELECT name FROM groups WHERE in_config = 1 ORDER BY name`)
      for (const { name } of groupRows) {
        if (!data.groups.has(name)) yield* sql`UPDATE groups SET in_config = 0, updated_at = ${at} WHERE name = ${name}`
      }

      // users: the balance only while untouched
      const users = new Map(
        (yield* decodeRows(ExistingUser)(
          yield* sql`SELECT name, balance_micros, config_balance_micros, balance_touched FROM users ORDER BY name`
        )).map((u) => [u.name, u])
      )
      for (const u of byName(data.users.values(), (u) => u.name)) {
        const existing = users.get(u.name)
        if (existing?.balance_touched && existing.config_balance_micros !== u.balanceMicros) {
          notes.push(
            `user '${u.name}': balance_usd changed in the file but the balance has been used; it stays ` +
              `${existing.balance_micros / 1e6} USD (use 'modelgate users topup')`
          )
        }
        // Concurrency and the minute limits are the file's, re-applied at every start (an absent limit: none).
        yield* sql`INSERT INTO users (name, balance_micros, config_balance_micros, balance_touched, concurrency, rpm_limit,
            tpm_limit, in_config, created_at, updated_at)
          VALUES (${u.name}, ${u.balanceMicros}, ${u.balanceMicros}, 0, ${u.concurrency}, ${u.rpmLimit ?? null},
            ${u.tpmLimit ?? null}, 1, ${at}, ${at})
          ON CONFLICT (name) DO UPDATE SET
            balance_micros = CASE WHEN users.balance_touched = 0 THEN excluded.balance_micros ELSE users.balance_micros END,
            config_balance_micros = excluded.config_balance_micros, concurrency = excluded.concurrency,
            rpm_limit = excluded.rpm_limit, tpm_limit = excluded.tpm_limit, in_config = 1, updated_at = excluded.updated_at`
      }
      for (const name of byName(users.keys(), (n) => n)) {
        if (!data.users.has(name)) yield* sql`UPDATE users SET in_config = 0, updated_at = ${at} WHERE name = ${name}`
      }

      // subscriptions: window spend is never touched by the file
      for (const s of byName(data.subscriptions, (s) => `${s.userName}\u0000${s.groupName}`)) {
        yield* sql`INSERT INTO subscriptions (user_name, group_name, status, starts_at, expires_at, in_config, updated_at)
          VALUES (${s.userName}, ${s.groupName}, ${s.status}, ${epochOrNull(s.startsAt)}, ${epochOrNull(s.expiresAt)}, 1, ${at})
          ON CONFLICT (user_name, group_name) DO UPDATE SET status = excluded.status, starts_at = excluded.starts_at,
            expires_at = excluded.expires_at, in_config = 1, updated_at = excluded.updated_at`
      }
      const subIds = new Set(data.subscriptions.map((s) => `${s.userName}\u0000${s.groupName}`))
      for (const s of yield* decodeRows(SubId)(yield* sql`SELECT user_name, group_name FROM subscriptions WHERE in_config = 1
        ORDER BY user_name, group_name`)) {
        if (!subIds.has(`${s.user_name}\u0000${s.group_name}`)) {
          yield* sql`UPDATE subscriptions SET status = 'suspended', in_config = 0, updated_at = ${at}
            WHERE user_name = ${s.user_name} AND group_name = ${s.group_name}`
        }
      }

      // keys: by id (the name); a removed config key is disabled
      const keys = new Map(
        (yield* decodeRows(ExistingKey)(
          yield* sql`SELECT id, hash, source, status, disabled_by, quota_used_micros FROM api_keys ORDER BY id`
        )).map((k) => [k.id, k])
      )
      const byHash = new Map([...keys.values()].map((k) => [k.hash, k]))
      for (const k of byName(data.keys, (k) => k.id)) {
        const existing = keys.get(k.id)
        if (existing !== undefined && existing.source !== "config") {
          return yield* new StoreError({
            message: `config key '${k.id}': that name belongs to a key created by an operator (CLI or admin API); give the config key another name`
          })
        }
        const sameSecret = byHash.get(k.sha256)
        if (sameSecret !== undefined && sameSecret.id !== k.id) {
          return yield* new StoreError({
            message: `config key '${k.id}': the same secret is already stored as key '${sameSecret.id}'; ` +
              `renaming a key is not supported (keep its name, or issue a new key)`
          })
        }
        const { disabledBy, status } = keyStatus(k, existing)
        if (disabledBy !== null && OPERATORS.has(disabledBy) && k.status !== "disabled") {
          notes.push(`key '${k.id}' stays disabled: it was disabled by an operator (${disabledBy})`)
        }
        yield* sql`INSERT INTO api_keys (id, hash, prefix, user_name, group_name, status, disabled_by, quota_micros,
            quota_used_micros, expires_at, concurrency, rpm_limit, tpm_limit, source, created_at, updated_at)
          VALUES (${k.id}, ${k.sha256}, ${k.prefix}, ${k.userName}, ${k.groupName}, ${status}, ${disabledBy},
            ${k.quotaMicros ?? null}, 0, ${epochOrNull(k.expiresAt)}, ${k.concurrency ?? null}, ${k.rpmLimit ?? null},
            ${k.tpmLimit ?? null}, 'config', ${at}, ${at})
          ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, prefix = excluded.prefix, user_name = excluded.user_name,
            group_name = excluded.group_name, status = excluded.status, disabled_by = excluded.disabled_by,
            quota_micros = excluded.quota_micros, expires_at = excluded.expires_at, concurrency = excluded.concurrency,
            rpm_limit = excluded.rpm_limit, tpm_limit = excluded.tpm_limit, updated_at = excluded.updated_at`
      }
      const configIds = new Set(data.keys.map((k) => k.id))
      for (const k of byName(keys.values(), (k) => k.id)) {
        if (k.source === "config" && !configIds.has(k.id) && k.status !== "disabled") {
          yield* sql`UPDATE api_keys SET status = 'disabled', disabled_by = 'removed', updated_at = ${at} WHERE id = ${k.id}`
        }
      }

      // accounts: the secret's environment variable name only (a key an operator stored under
      // the same name is dropped: the file's account is the file's)
      for (const a of data.accounts) {
        yield* sql`INSERT INTO accounts (name, platform, kind, base_url, secret_env, groups, priority, concurrency,
            model_mapping, status, cooldown_until, in_config, updated_at)
          VALUES (${a.name}, ${a.platform}, ${a.kind}, ${a.baseUrl}, ${data.accountSecretEnv.get(a.name) ?? null}, ${JSON.stringify(a.groups)},
            ${a.priority}, ${a.concurrency}, ${a.modelMapping === undefined ? null : JSON.stringify(a.modelMapping)},
            'active', NULL, 1, ${at})
          ON CONFLICT (name) DO UPDATE SET platform = excluded.platform, kind = excluded.kind,
            base_url = excluded.base_url, secret_env = excluded.secret_env, api_key_sealed = NULL, groups = excluded.groups,
            priority = excluded.priority, concurrency = excluded.concurrency, model_mapping = excluded.model_mapping,
            status = 'active', in_config = 1, updated_at = excluded.updated_at`
      }
      // An account the file no longer names is disabled; an operator's (admin API) is not the file's to touch.
      const accountNames = new Set(data.accounts.map((a) => a.name))
      for (const { name } of yield* decodeRows(Name)(yield* sql`SELECT name FROM accounts WHERE status = 'active' AND in_config = 1`)) {
        if (!accountNames.has(name)) yield* sql`UPDATE accounts SET status = 'disabled', updated_at = ${at} WHERE name = ${name}`
      }

      // prices: the file's are replaced by what it says now; an operator's (admin API) are kept,
      // unless the file names the same model, which then wins (events keep the cost they were charged)
      yield* sql`DELETE FROM prices WHERE in_config = 1`
      for (const p of data.prices) {
        yield* sql`INSERT INTO prices (model, input_pico, output_pico, cache_read_pico, cache_write_pico, in_config, updated_at)
          VALUES (${p.model}, ${Number(picoPerToken(p.price.input))}, ${Number(picoPerToken(p.price.output))},
            ${Number(picoPerToken(p.price.cacheRead))}, ${Number(picoPerToken(p.price.cacheWrite))}, 1, ${at})
          ON CONFLICT (model) DO UPDATE SET input_pico = excluded.input_pico, output_pico = excluded.output_pico,
            cache_read_pico = excluded.cache_read_pico, cache_write_pico = excluded.cache_write_pico, in_config = 1,
            updated_at = excluded.updated_at`
      }
    })
    yield* sql.withTransaction(run)
    return { notes } satisfies SyncReport
  }).pipe(orStoreError("syncing the configuration into the database failed"))
