/**
 * Upstream accounts an operator adds through the admin API or the CLI: the key is given by value
 * and stored sealed under MODELGATE_SECRET_KEY (domain/secretBox.ts, bound to the account's name
 * and base URL), or named by an environment variable whose name starts with
 * ADMIN_ACCOUNT_ENV_PREFIX (no other: the admin token must not be able to send DATABASE_URL or
 * ADMIN_TOKEN to a host of its choosing). No read returns a key or its sealed form. The scheduler
 * picks a change up as soon as it is announced (store/accounts.ts reloads them). Accounts the
 * config file names are the file's: changing or removing them here is refused as
 * `managed_by_config` (an operator can still take one out of rotation, which is scheduler state).
 */
import { SqlClient } from "effect/sql"
import { Clock, Config, Effect, Option, Redacted, Result, Schema } from "effect"
import type { AccountKeySettingsShape } from "../../config/AppConfig.js"
import { defaultBaseUrl } from "../../config/resolve.js"
import { AdminConflict, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import type { Platform } from "../../domain/config.js"
import { accountContext, open, SECRET_KEY_HINT, seal, sealedKeyId, type SecretKey } from "../../domain/secretBox.js"
import { DbFlag, DbInt, decodeRows, orStoreError } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction } from "./tx.js"

export interface NewAccount {
  readonly name: string
  readonly platform: Platform
  readonly kind: "http" | "simulator"
  readonly baseUrl?: string | undefined
  /** The key itself, stored sealed. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly apiKeyEnv?: string | undefined
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly concurrency: number
  readonly modelMapping?: Readonly<Record<string, string>> | undefined
}

/** Each field: absent leaves it; `modelMapping: null` removes the mapping; a key given replaces the other kind. */
export interface AccountChange {
  readonly baseUrl?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly apiKeyEnv?: string | undefined
  readonly groups?: ReadonlyArray<string> | undefined
  readonly priority?: number | undefined
  readonly concurrency?: number | undefined
  readonly modelMapping?: Readonly<Record<string, string>> | null | undefined
}

const Existing = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  kind: Schema.String,
  base_url: Schema.String,
  secret_env: Schema.NullOr(Schema.String),
  api_key_sealed: Schema.NullOr(Schema.String),
  groups: Schema.fromJsonString(Schema.Array(Schema.String)),
  priority: Schema.Number,
  concurrency: Schema.Number,
  model_mapping: Schema.NullOr(Schema.String),
  status: Schema.String,
  in_config: DbFlag
})

const GroupPlatform = Schema.Struct({ name: Schema.String, platform: Schema.String })

/** `lock`: the row stays locked until the transaction ends (tx.ts forUpdate), for a change that rewrites it. */
const existing = Effect.fnUntraced(function*(name: string, lock = false) {
  const sql = yield* SqlClient.SqlClient
  const select = sql`SELECT name, platform, kind, base_url, secret_env, api_key_sealed, groups, priority, concurrency, model_mapping,
      status, in_config
      FROM accounts WHERE name = ${name}`
  return (yield* decodeRows(Existing)(yield* (lock ? forUpdate(sql, select) : select)))[0]
})

/** The rules the config file's accounts follow too: known groups of the account's platform. */
const validateGroups = Effect.fnUntraced(function*(platform: string, groups: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  const known = yield* decodeRows(GroupPlatform)(yield* sql`SELECT name, platform FROM groups`)
  for (const g of groups) {
    const group = known.find((k) => k.name === g)
    if (group === undefined) return yield* new AdminInvalid({ message: `unknown group '${g}'`, code: "unknown_group", param: "groups" })
    if (group.platform !== platform) {
      return yield* new AdminInvalid({
        message: `group '${g}' is on ${group.platform}; a ${platform} account cannot serve it`,
        code: "platform_mismatch",
        param: "groups"
      })
    }
  }
})

/** An environment variable an operator's account may take its key from: one under the configured prefix, and set. */
const allowedEnv = Effect.fnUntraced(function*(name: string, prefix: string | undefined) {
  if (prefix === undefined || prefix === "") {
    return yield* new AdminInvalid({
      message: "api_key_env is not accepted by this gateway: send the key itself as api_key (stored encrypted under " +
        "MODELGATE_SECRET_KEY), or set ADMIN_ACCOUNT_ENV_PREFIX on the gateway (e.g. MODELGATE_ACCOUNT_) and name a variable that starts with it",
      code: "api_key_env_not_allowed",
      param: "api_key_env"
    })
  }
  if (!name.startsWith(prefix)) {
    return yield* new AdminInvalid({
      message: `api_key_env must name a variable starting with ${prefix} (ADMIN_ACCOUNT_ENV_PREFIX): ` +
        "no other variable of the gateway's environment is sent upstream for an account added here",
      code: "api_key_env_not_allowed",
      param: "api_key_env"
    })
  }
  const value = yield* Effect.orElseSucceed(Config.option(Config.String(name)), () => Option.none<string>())
  if (Option.isNone(value) || value.value === "") {
    return yield* new AdminInvalid({
      message: `environment variable ${name} is not set in this gateway's environment`,
      code: "api_key_env_unset",
      param: "api_key_env"
    })
  }
})

/** `apiKey` sealed for the account at `baseUrl`; refused when this gateway has no MODELGATE_SECRET_KEY. */
const sealFor = (settings: AccountKeySettingsShape, name: string, baseUrl: string, apiKey: Redacted.Redacted<string>) =>
  settings.secretKey === undefined
    ? Effect.fail(
      new AdminInvalid({
        message: `storing an account key needs MODELGATE_SECRET_KEY on the gateway (${SECRET_KEY_HINT}), then a restart; nothing was stored`,
        code: "secret_key_unset",
        param: "api_key"
      })
    )
    : Effect.succeed(seal(settings.secretKey, Redacted.value(apiKey), accountContext(name, baseUrl)))

const bothKeys = new AdminInvalid({
  message: "give the key as api_key or name it with api_key_env, not both",
  code: "invalid_request",
  param: "api_key"
})

type KeySource = "stored" | "env" | null

const sourceOf = (row: { readonly secret_env: string | null; readonly api_key_sealed: string | null }): KeySource =>
  row.api_key_sealed !== null ? "stored" : row.secret_env !== null ? "env" : null

/** The credential columns of a new account: sealed key or variable name, as its kind needs. */
const credentialOf = Effect.fnUntraced(function*(settings: AccountKeySettingsShape, a: NewAccount, baseUrl: string) {
  if (a.apiKey !== undefined && a.apiKeyEnv !== undefined) return yield* bothKeys
  if (a.kind === "simulator") {
    if (a.apiKey !== undefined || a.apiKeyEnv !== undefined) {
      return yield* new AdminInvalid({ message: "a simulator account takes no key", code: "invalid_request", param: "api_key" })
    }
    return { secret_env: null, api_key_sealed: null }
  }
  if (a.apiKey !== undefined) return { secret_env: null, api_key_sealed: yield* sealFor(settings, a.name, baseUrl, a.apiKey) }
  if (a.apiKeyEnv !== undefined) {
    yield* allowedEnv(a.apiKeyEnv, settings.accountEnvPrefix)
    return { secret_env: a.apiKeyEnv, api_key_sealed: null }
  }
  return yield* new AdminInvalid({
    message: "an http account needs its key: api_key (stored encrypted), or api_key_env (see ADMIN_ACCOUNT_ENV_PREFIX)",
    code: "missing_account_key",
    param: "api_key"
  })
})

const fromFile = (name: string) =>
  new AdminConflict({
    message: `account '${name}' comes from the config file: change it there (the file is applied at every start)`,
    code: "managed_by_config"
  })

/** An active account an operator may change: 404 when there is none, 409 when it is the file's. */
const operatorAccount = Effect.fnUntraced(function*(name: string) {
  const before = yield* existing(name, true)
  if (before === undefined || before.status !== "active") {
    return yield* new AdminNotFound({ message: `no account named '${name}'`, code: "account_not_found" })
  }
  if (before.in_config) return yield* fromFile(name)
  return before
})

export const createAccount = (actor: Actor, settings: AccountKeySettingsShape, a: NewAccount) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if ((yield* existing(a.name)) !== undefined) {
      return yield* new AdminConflict({ message: `an account named '${a.name}' already exists`, code: "account_exists" })
    }
    yield* validateGroups(a.platform, a.groups)
    const baseUrl = (a.baseUrl ?? defaultBaseUrl[a.platform]).replace(/\/+$/, "")
    const credential = yield* credentialOf(settings, a, baseUrl)
    yield* sql`INSERT INTO accounts (name, platform, kind, base_url, secret_env, api_key_sealed, groups, priority, concurrency,
        model_mapping, status, cooldown_until, in_config, updated_at)
      VALUES (${a.name}, ${a.platform}, ${a.kind}, ${baseUrl}, ${credential.secret_env}, ${credential.api_key_sealed},
        ${JSON.stringify(a.groups)}, ${a.priority}, ${a.concurrency},
        ${a.modelMapping === undefined ? null : JSON.stringify(a.modelMapping)}, 'active', NULL, 0, ${(yield* Clock.currentTimeMillis)})`
    yield* recordAudit(actor, "account.create", a.name, {
      platform: a.platform,
      kind: a.kind,
      base_url: baseUrl,
      key_source: sourceOf(credential),
      api_key_env: credential.secret_env,
      groups: a.groups,
      priority: a.priority,
      concurrency: a.concurrency
    })
  }), "adding the account failed")

/**
 * A new key replaces the old one, of either kind. The key goes wherever base_url says: moving an
 * account whose key is stored takes the key again in the same change (its sealed form is bound to
 * the old URL), and moving one whose key is a variable takes a variable the prefix allows.
 */
export const updateAccount = (actor: Actor, settings: AccountKeySettingsShape, name: string, c: AccountChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* operatorAccount(name)
    const baseUrl = (c.baseUrl ?? before.base_url).replace(/\/+$/, "")
    const moved = baseUrl !== before.base_url
    if (c.apiKey !== undefined && c.apiKeyEnv !== undefined) return yield* bothKeys
    if ((c.apiKey !== undefined || c.apiKeyEnv !== undefined) && before.kind === "simulator") {
      return yield* new AdminInvalid({ message: "a simulator account takes no key", code: "invalid_request", param: "api_key" })
    }
    let credential = { secret_env: before.secret_env, api_key_sealed: before.api_key_sealed }
    if (c.apiKey !== undefined) credential = { secret_env: null, api_key_sealed: yield* sealFor(settings, name, baseUrl, c.apiKey) }
    else if (c.apiKeyEnv !== undefined) {
      yield* allowedEnv(c.apiKeyEnv, settings.accountEnvPrefix)
      credential = { secret_env: c.apiKeyEnv, api_key_sealed: null }
    } else if (moved && before.api_key_sealed !== null) {
      return yield* new AdminInvalid({
        message: "changing base_url sends the account's key to another host: give the key again (api_key) in the same change",
        code: "account_key_required",
        param: "api_key"
      })
    } else if (moved && before.secret_env !== null) {
      yield* allowedEnv(before.secret_env, settings.accountEnvPrefix)
    }
    const next = {
      groups: c.groups ?? before.groups,
      priority: c.priority ?? before.priority,
      concurrency: c.concurrency ?? before.concurrency,
      model_mapping: c.modelMapping === undefined ? before.model_mapping : c.modelMapping === null ? null : JSON.stringify(c.modelMapping)
    }
    yield* validateGroups(before.platform, next.groups)
    yield* sql`UPDATE accounts SET base_url = ${baseUrl}, secret_env = ${credential.secret_env}, api_key_sealed = ${credential.api_key_sealed},
        groups = ${JSON.stringify(next.groups)}, priority = ${next.priority}, concurrency = ${next.concurrency},
        model_mapping = ${next.model_mapping}, updated_at = ${(yield* Clock.currentTimeMillis)}
      WHERE name = ${name}`
    yield* recordAudit(actor, "account.update", name, {
      base_url: [before.base_url, baseUrl],
      key_source: [sourceOf(before), sourceOf(credential)],
      api_key_env: [before.secret_env, credential.secret_env],
      ...(c.apiKey === undefined ? {} : { api_key: "replaced" }),
      groups: [before.groups, next.groups],
      priority: [before.priority, next.priority],
      concurrency: [before.concurrency, next.concurrency]
    })
  }), "changing the account failed")

/** Out of the scheduler's accounts for good (the row stays, as 'disabled'). */
export const removeAccount = (actor: Actor, name: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* operatorAccount(name)
    yield* sql`UPDATE accounts SET status = 'disabled', updated_at = ${(yield* Clock.currentTimeMillis)} WHERE name = ${name}`
    yield* recordAudit(actor, "account.remove", name)
  }), "removing the account failed")

const ListedRow = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  kind: Schema.String,
  base_url: Schema.String,
  groups: Schema.fromJsonString(Schema.Array(Schema.String)),
  priority: DbInt,
  concurrency: DbInt,
  model_mapping: Schema.NullOr(Schema.fromJsonString(Schema.Record(Schema.String, Schema.String))),
  status: Schema.String,
  in_config: DbFlag,
  key_source: Schema.NullOr(Schema.Literals(["stored", "env"]))
})
export type AccountRow = typeof ListedRow.Type

/** Every account the database knows, disabled ones too: where its key comes from, never the key. */
export const listAccounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(ListedRow)(
    yield* sql`SELECT name, platform, kind, base_url, groups, priority, concurrency, model_mapping, status, in_config,
        CASE WHEN api_key_sealed IS NOT NULL THEN 'stored' WHEN secret_env IS NOT NULL THEN 'env' ELSE NULL END AS key_source
      FROM accounts ORDER BY in_config DESC, name`
  )
}).pipe(orStoreError("reading the accounts failed"))

export interface Rotation {
  /** Re-sealed under the current key. */
  readonly resealed: ReadonlyArray<string>
  /** Already under it. */
  readonly current: ReadonlyArray<string>
  /** Not opened by either key, left as they were. */
  readonly failed: ReadonlyArray<{ readonly name: string; readonly reason: string }>
}

const SealedRow = Schema.Struct({ name: Schema.String, base_url: Schema.String, api_key_sealed: Schema.String })

/**
 * Every stored key sealed again under MODELGATE_SECRET_KEY, opened with it or with
 * MODELGATE_SECRET_KEY_PREVIOUS: after it, the previous key may be dropped. One transaction; a key
 * neither opens stays as it was and is reported.
 */
export const rotateAccountKeys = (actor: Actor, settings: AccountKeySettingsShape) =>
  inTransaction(Effect.gen(function*() {
    const current = settings.secretKey
    if (current === undefined) {
      return yield* new AdminInvalid({
        message: `rotating needs the new key as MODELGATE_SECRET_KEY and the old one as MODELGATE_SECRET_KEY_PREVIOUS (${SECRET_KEY_HINT})`,
        code: "secret_key_unset",
        param: null
      })
    }
    const keys: ReadonlyArray<SecretKey> = settings.previousSecretKey === undefined ? [current] : [current, settings.previousSecretKey]
    const sql = yield* SqlClient.SqlClient
    const rows = yield* decodeRows(SealedRow)(
      yield* forUpdate(sql, sql`SELECT name, base_url, api_key_sealed FROM accounts WHERE api_key_sealed IS NOT NULL ORDER BY name`)
    )
    const resealed: Array<string> = []
    const already: Array<string> = []
    const failed: Array<{ name: string; reason: string }> = []
    for (const r of rows) {
      const was = sealedKeyId(r.api_key_sealed)
      if (was === current.id) {
        already.push(r.name)
        continue
      }
      const context = accountContext(r.name, r.base_url)
      const opened = open(keys, r.api_key_sealed, context)
      if (Result.isFailure(opened)) {
        failed.push({ name: r.name, reason: opened.failure })
        continue
      }
      yield* sql`UPDATE accounts SET api_key_sealed = ${seal(current, Redacted.value(opened.success), context)},
          updated_at = ${(yield* Clock.currentTimeMillis)} WHERE name = ${r.name}`
      yield* recordAudit(actor, "account.rotate_key", r.name, { key_id: [was ?? null, current.id] })
      resealed.push(r.name)
    }
    return { resealed, current: already, failed } satisfies Rotation
  }), "re-encrypting the account keys failed")
