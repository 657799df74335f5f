/**
 * The schema, as numbered migrations. Append new ones; never edit one that has shipped.
 *
 * Portable on purpose (SQLite and PostgreSQL run the same text): natural TEXT keys instead of
 * dialect-specific identity columns, 0/1 INTEGERs instead of booleans (SQLite has no boolean type; its drivers differ on JS
 * booleans), instants as BIGINT epoch milliseconds, money as BIGINT micro-dollars, prices as BIGINT
 * pico-dollars per token, multipliers as BIGINT parts per million, UTC days as 'YYYY-MM-DD' TEXT.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

const initial: Migration = {
  version: 1,
  name: "initial",
  statements: [
    `CREATE TABLE groups (
      name TEXT PRIMARY KEY,
      platform TEXT NOT NULL,
      billing TEXT NOT NULL,
      allow_image_generation INTEGER NOT NULL,
      rate_multiplier_ppm BIGINT NOT NULL,
      models TEXT,
      moderation TEXT NOT NULL,
      daily_limit_micros BIGINT,
      weekly_limit_micros BIGINT,
      monthly_limit_micros BIGINT,
      in_config INTEGER NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    // balance_touched: set by the first settlement or top-up; from then on the file's balance_usd
    // (an initial balance) is no longer applied.
    `CREATE TABLE users (
      name TEXT PRIMARY KEY,
      balance_micros BIGINT NOT NULL,
      config_balance_micros BIGINT,
      balance_touched INTEGER NOT NULL DEFAULT 0,
      concurrency INTEGER NOT NULL,
      in_config INTEGER NOT NULL,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    // Window spend is (window start, micros); a start older than the current window means zero.
    `CREATE TABLE subscriptions (
      user_name TEXT NOT NULL REFERENCES users(name),
      group_name TEXT NOT NULL REFERENCES groups(name),
      status TEXT NOT NULL,
      starts_at BIGINT,
      expires_at BIGINT,
      daily_start BIGINT NOT NULL DEFAULT 0,
      daily_used_micros BIGINT NOT NULL DEFAULT 0,
      weekly_start BIGINT NOT NULL DEFAULT 0,
      weekly_used_micros BIGINT NOT NULL DEFAULT 0,
      monthly_start BIGINT NOT NULL DEFAULT 0,
      monthly_used_micros BIGINT NOT NULL DEFAULT 0,
      in_config INTEGER NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (user_name, group_name)
    )`,
    // Only the SHA-256 of a key is stored, with a short visible prefix for listings.
    `CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      hash TEXT NOT NULL UNIQUE,
      prefix TEXT NOT NULL,
      user_name TEXT NOT NULL REFERENCES users(name),
      group_name TEXT NOT NULL REFERENCES groups(name),
      status TEXT NOT NULL,
      disabled_by TEXT,
      quota_micros BIGINT,
      quota_used_micros BIGINT NOT NULL DEFAULT 0,
      expires_at BIGINT,
      concurrency INTEGER,
      source TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE INDEX api_keys_user ON api_keys (user_name)`,
    // The secret itself is never stored in clear: the name of the environment variable holding it
    // (an operator's account may keep it sealed instead: sealedAccountKeys below).
    `CREATE TABLE accounts (
      name TEXT PRIMARY KEY,
      platform TEXT NOT NULL,
      kind TEXT NOT NULL,
      base_url TEXT NOT NULL,
      secret_env TEXT,
      groups TEXT NOT NULL,
      priority INTEGER NOT NULL,
      concurrency INTEGER NOT NULL,
      model_mapping TEXT,
      status TEXT NOT NULL,
      cooldown_until BIGINT,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE TABLE prices (
      model TEXT PRIMARY KEY,
      input_pico BIGINT NOT NULL,
      output_pico BIGINT NOT NULL,
      cache_read_pico BIGINT NOT NULL,
      cache_write_pico BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    // One row per settled request: the primary key is what makes settlement exactly-once.
    `CREATE TABLE usage_events (
      request_id TEXT PRIMARY KEY,
      key_id TEXT NOT NULL,
      user_name TEXT NOT NULL,
      group_name TEXT NOT NULL,
      model TEXT NOT NULL,
      day TEXT NOT NULL,
      at BIGINT NOT NULL,
      input_tokens BIGINT NOT NULL,
      output_tokens BIGINT NOT NULL,
      cache_read_tokens BIGINT NOT NULL,
      cache_creation_tokens BIGINT NOT NULL,
      reasoning_tokens BIGINT NOT NULL,
      cost_micros BIGINT NOT NULL,
      charged_to TEXT NOT NULL
    )`,
    `CREATE INDEX usage_events_key_at ON usage_events (key_id, at)`,
    // What /v1/usage reads: never a scan of usage_events.
    `CREATE TABLE usage_daily (
      key_id TEXT NOT NULL,
      day TEXT NOT NULL,
      model TEXT NOT NULL,
      requests BIGINT NOT NULL,
      input_tokens BIGINT NOT NULL,
      output_tokens BIGINT NOT NULL,
      cache_read_tokens BIGINT NOT NULL,
      cache_creation_tokens BIGINT NOT NULL,
      cost_micros BIGINT NOT NULL,
      PRIMARY KEY (key_id, day, model)
    )`,
    // Requests that may owe a settlement. A row left behind after a crash names the request to reconcile.
    `CREATE TABLE usage_open (
      request_id TEXT PRIMARY KEY,
      key_id TEXT NOT NULL,
      model TEXT NOT NULL,
      started_at BIGINT NOT NULL,
      reported_at BIGINT
    )`,
    `CREATE TABLE balance_topups (
      id TEXT PRIMARY KEY,
      user_name TEXT NOT NULL REFERENCES users(name),
      amount_micros BIGINT NOT NULL,
      note TEXT,
      at BIGINT NOT NULL
    )`
  ]
}

// 1 when the gateway counted the tokens itself (a stream cut before the upstream reported usage).
const estimatedUsage: Migration = {
  version: 2,
  name: "usage_events.estimated",
  statements: [`ALTER TABLE usage_events ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0`]
}

// The operator surface: who changed what (admin API, CLI), and keys deleted from listings. A
// deleted key is also disabled; its row stays, since usage rows name it.
const operatorSurface: Migration = {
  version: 3,
  name: "admin_audit, api_keys.deleted_at",
  statements: [
    `CREATE TABLE admin_audit (
      id TEXT PRIMARY KEY,
      at BIGINT NOT NULL,
      actor TEXT NOT NULL,
      action TEXT NOT NULL,
      target TEXT NOT NULL,
      detail TEXT
    )`,
    `CREATE INDEX admin_audit_at ON admin_audit (at)`,
    `ALTER TABLE api_keys ADD COLUMN deleted_at BIGINT`
  ]
}

// A user disabled by an operator: none of their keys is admitted (NULL: active).
const disabledUsers: Migration = {
  version: 4,
  name: "users.disabled_at",
  statements: [`ALTER TABLE users ADD COLUMN disabled_at BIGINT`, `ALTER TABLE users ADD COLUMN disabled_by TEXT`]
}

// Prices set by an operator (0) beside the file's (1): the file's are replaced at every start, the others kept.
const operatorPrices: Migration = {
  version: 5,
  name: "prices.in_config",
  statements: [`ALTER TABLE prices ADD COLUMN in_config INTEGER NOT NULL DEFAULT 1`]
}

// Accounts added by an operator (0) beside the file's (1): a start disables the file's it no longer names, never the others.
const operatorAccounts: Migration = {
  version: 6,
  name: "accounts.in_config",
  statements: [`ALTER TABLE accounts ADD COLUMN in_config INTEGER NOT NULL DEFAULT 1`]
}

// Requests / tokens per minute on groups, users and keys (NULL: no limit). BIGINT: a token limit may pass 2^31.
const minuteLimits: Migration = {
  version: 7,
  name: "groups, users, api_keys: rpm_limit, tpm_limit",
  statements: [
    `ALTER TABLE groups ADD COLUMN rpm_limit BIGINT`,
    `ALTER TABLE groups ADD COLUMN tpm_limit BIGINT`,
    `ALTER TABLE users ADD COLUMN rpm_limit BIGINT`,
    `ALTER TABLE users ADD COLUMN tpm_limit BIGINT`,
    `ALTER TABLE api_keys ADD COLUMN rpm_limit BIGINT`,
    `ALTER TABLE api_keys ADD COLUMN tpm_limit BIGINT`
  ]
}

// 1 when the request was charged the fallback price: neither an override nor the price package knew its model.
const priceFallback: Migration = {
  version: 8,
  name: "usage_events.price_fallback",
  statements: [`ALTER TABLE usage_events ADD COLUMN price_fallback INTEGER NOT NULL DEFAULT 0`]
}

// Whether a group's keys may use the Responses WebSocket transport; 1 (allowed) for every existing group.
const groupWebsocket: Migration = {
  version: 9,
  name: "groups.websocket",
  statements: [`ALTER TABLE groups ADD COLUMN websocket INTEGER NOT NULL DEFAULT 1`]
}

// The upstream account that answered, on each usage event and as a dimension of the daily rollups,
// so the prompt-cache figures per account outlive the process and add up across gateways. Events
// and rollups from before have none ('' in the rollups). The rollup's key grows by a column: the
// table is rebuilt (no portable way to change a primary key in place).
const usageAccount: Migration = {
  version: 10,
  name: "usage_events.account, usage_daily.account",
  statements: [
    `ALTER TABLE usage_events ADD COLUMN account TEXT`,
    `CREATE TABLE usage_daily_next (
      key_id TEXT NOT NULL,
      day TEXT NOT NULL,
      model TEXT NOT NULL,
      account TEXT NOT NULL,
      requests BIGINT NOT NULL,
      input_tokens BIGINT NOT NULL,
      output_tokens BIGINT NOT NULL,
      cache_read_tokens BIGINT NOT NULL,
      cache_creation_tokens BIGINT NOT NULL,
      cost_micros BIGINT NOT NULL,
      PRIMARY KEY (key_id, day, model, account)
    )`,
    `INSERT INTO usage_daily_next (key_id, day, model, account, requests, input_tokens, output_tokens,
        cache_read_tokens, cache_creation_tokens, cost_micros)
      SELECT key_id, day, model, '', requests, input_tokens, output_tokens, cache_read_tokens,
        cache_creation_tokens, cost_micros FROM usage_daily`,
    `DROP TABLE usage_daily`,
    `ALTER TABLE usage_daily_next RENAME TO usage_daily`
  ]
}

// An operator's account may keep its key in the database, sealed under MODELGATE_SECRET_KEY
// (domain/secretBox.ts: versioned, never the key in clear); NULL: the key is named by secret_env.
const sealedAccountKeys: Migration = {
  version: 11,
  name: "accounts.api_key_sealed",
  statements: [`ALTER TABLE accounts ADD COLUMN api_key_sealed TEXT`]
}

// The provider tools (billed per call upstream) a group's requests may use: a JSON array of names; NULL: none.
const groupProviderTools: Migration = {
  version: 12,
  name: "groups.provider_tools",
  statements: [`ALTER TABLE groups ADD COLUMN provider_tools TEXT`]
}

export const migrations: ReadonlyArray<Migration> = [
  initial,
  estimatedUsage,
  operatorSurface,
  disabledUsers,
  operatorPrices,
  operatorAccounts,
  minuteLimits,
  priceFallback,
  groupWebsocket,
  usageAccount,
  sealedAccountKeys,
  groupProviderTools
]
