/**
 * Upstream accounts an operator adds through the admin API: stored with the name of the
 * environment variable that holds the credential (never the credential), picked by the scheduler
 * as soon as the change is announced (store/accounts.ts reloads them). Accounts the config file
 * names are the file's: changing or removing them here is refused as `managed_by_config` (an
 * operator can still take one out of rotation, which is scheduler state).
 */
import { SqlClient } from "effect/sql"
import { Clock, Config, Effect, Option, Schema } from "effect"
import { defaultBaseUrl } from "../../config/resolve.js"
import { AdminConflict, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import type { Platform } from "../../domain/config.js"
import { DbFlag, decodeRows } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction } from "./tx.js"

export interface NewAccount {
  readonly name: string
  readonly platform: Platform
  readonly kind: "http" | "simulator"
  readonly baseUrl?: string | undefined
  readonly apiKeyEnv?: string | undefined
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly concurrency: number
  readonly modelMapping?: Readonly<Record<string, string>> | undefined
}

/** Each field: absent leaves it; `modelMapping: null` removes the mapping. */
export interface AccountChange {
  readonly baseUrl?: string | undefined
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
  groups: Schema.fromJsonString(Schema.Array(Schema.String)),
  priority: Schema.Number,
  concurrency: Schema.Number,
  model_mapping: Schema.NullOr(Schema.String),
  status: Schema.String,
  in_config: DbFlag
})

const GroupPlatform = Schema.Struct({ name: Schema.String, platform: Schema.String })

/** `lock`: the row stays locked until the transaction ends (tx.ts forUpdate), for a change that rewrites it. */
const existing = (name: string, lock = false) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`SELECT name, platform, kind, base_url, secret_env, groups, priority, concurrency, model_mapping, status, in_config
        FROM accounts WHERE name = ${name}`
    return (yield* decodeRows(Existing)(yield* (lock ? forUpdate(sql, select) : select)))[0]
  })

/** The rules the config file's accounts follow too: known groups of the account's platform, a credential for http. */
const validate = (platform: string, kind: string, groups: ReadonlyArray<string>, apiKeyEnv: string | null) =>
  Effect.gen(function*() {
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
    if (kind === "http") {
      if (apiKeyEnv === null) {
        return yield* new AdminInvalid({ message: "an http account needs api_key_env", code: "missing_api_key_env", param: "api_key_env" })
      }
      const value = yield* Effect.orElseSucceed(Config.option(Config.String(apiKeyEnv)), () => Option.none<string>())
      if (Option.isNone(value) || value.value === "") {
        return yield* new AdminInvalid({
          message: `environment variable ${apiKeyEnv} is not set in this gateway's environment`,
          code: "api_key_env_unset",
          param: "api_key_env"
        })
      }
    }
  })

const fromFile = (name: string) =>
  new AdminConflict({
    message: `account '${name}' comes from the config file: change it there (the file is applied at every start)`,
    code: "managed_by_config"
  })

/** An active account an operator may change: 404 when there is none, 409 when it is the file's. */
const operatorAccount = (name: string) =>
  Effect.gen(function*() {
    const before = yield* existing(name, true)
    if (before === undefined || before.status !== "active") {
      return yield* new AdminNotFound({ message: `no account named '${name}'`, code: "account_not_found" })
    }
    if (before.in_config) return yield* fromFile(name)
    return before
  })

export const createAccount = (actor: Actor, a: NewAccount) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if ((yield* existing(a.name)) !== undefined) {
      return yield* new AdminConflict({ message: `an account named '${a.name}' already exists`, code: "account_exists" })
    }
    yield* validate(a.platform, a.kind, a.groups, a.apiKeyEnv ?? null)
    const baseUrl = (a.baseUrl ?? defaultBaseUrl[a.platform]).replace(/\/+$/, "")
    yield* sql`INSERT INTO accounts (name, platform, kind, base_url, secret_env, groups, priority, concurrency, model_mapping,
        status, cooldown_until, in_config, updated_at)
      VALUES (${a.name}, ${a.platform}, ${a.kind}, ${baseUrl}, ${a.apiKeyEnv ?? null}, ${JSON.stringify(a.groups)}, ${a.priority},
        ${a.concurrency}, ${a.modelMapping === undefined ? null : JSON.stringify(a.modelMapping)}, 'active', NULL, 0, ${(yield* Clock.currentTimeMillis)})`
    yield* recordAudit(actor, "account.create", a.name, {
      platform: a.platform,
      kind: a.kind,
      base_url: baseUrl,
      api_key_env: a.apiKeyEnv ?? null,
      groups: a.groups,
      priority: a.priority,
      concurrency: a.concurrency
    })
  }), "adding the account failed")

export const updateAccount = (actor: Actor, name: string, c: AccountChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* operatorAccount(name)
    const next = {
      base_url: (c.baseUrl ?? before.base_url).replace(/\/+$/, ""),
      secret_env: c.apiKeyEnv ?? before.secret_env,
      groups: c.groups ?? before.groups,
      priority: c.priority ?? before.priority,
      concurrency: c.concurrency ?? before.concurrency,
      model_mapping: c.modelMapping === undefined ? before.model_mapping : c.modelMapping === null ? null : JSON.stringify(c.modelMapping)
    }
    yield* validate(before.platform, before.kind, next.groups, next.secret_env)
    yield* sql`UPDATE accounts SET base_url = ${next.base_url}, secret_env = ${next.secret_env}, groups = ${JSON.stringify(next.groups)},
        priority = ${next.priority}, concurrency = ${next.concurrency}, model_mapping = ${next.model_mapping}, updated_at = ${(yield* Clock.currentTimeMillis)}
      WHERE name = ${name}`
    yield* recordAudit(actor, "account.update", name, {
      base_url: [before.base_url, next.base_url],
      api_key_env: [before.secret_env, next.secret_env],
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
