/**
 * The upstream accounts an operator added through the admin API or the CLI (accounts.in_config =
 * 0), as the scheduler uses them: the credential is the key stored sealed in the row, opened with
 * MODELGATE_SECRET_KEY (or its previous value during a rotation), else the environment variable
 * the row names. A key that does not open leaves the account without one (the upstream refuses it,
 * and the operator sees it taken out) and says why in the log, never what. The config file's
 * accounts come from the loaded file instead.
 */
import { SqlClient } from "effect/sql"
import { Config, Effect, Option, Redacted, Result, Schema } from "effect"
import { Platform } from "../domain/config.js"
import type { Account } from "../domain/model.js"
import { accountContext, open, type SecretKey } from "../domain/secretBox.js"
import { DbInt, decodeRows } from "./rows.js"

const AccountRow = Schema.Struct({
  name: Schema.String,
  platform: Platform,
  kind: Schema.Literals(["http", "simulator"]),
  base_url: Schema.String,
  secret_env: Schema.NullOr(Schema.String),
  api_key_sealed: Schema.NullOr(Schema.String),
  groups: Schema.fromJsonString(Schema.Array(Schema.String)),
  priority: DbInt,
  concurrency: DbInt,
  model_mapping: Schema.NullOr(Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)))
})

type Row = typeof AccountRow.Type

/** The row's credential and where it came from; none when there is none or it cannot be had. */
const secretOf = (keys: ReadonlyArray<SecretKey>, r: Row): Effect.Effect<Pick<Account, "secret" | "keySource">> => {
  if (r.api_key_sealed !== null) {
    const opened = open(keys, r.api_key_sealed, accountContext(r.name, r.base_url))
    if (Result.isSuccess(opened)) return Effect.succeed({ secret: opened.success, keySource: "stored" })
    return Effect.as(
      Effect.logWarning(`account '${r.name}' has no usable key: its stored key does not open: ${opened.failure}`),
      { secret: undefined, keySource: "stored" }
    )
  }
  if (r.secret_env === null) return Effect.succeed({ secret: undefined })
  return Effect.map(
    Effect.orElseSucceed(Config.option(Config.Redacted(r.secret_env)), () => Option.none<Redacted.Redacted<string>>()),
    (secret) => ({ secret: Option.getOrUndefined(secret), keySource: "env" })
  )
}

/** `keys`: what opens a stored key (MODELGATE_SECRET_KEY, then MODELGATE_SECRET_KEY_PREVIOUS). */
export const operatorAccounts = Effect.fnUntraced(function*(keys: ReadonlyArray<SecretKey>) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(AccountRow)(
    yield* sql`SELECT name, platform, kind, base_url, secret_env, api_key_sealed, groups, priority, concurrency, model_mapping
      FROM accounts WHERE in_config = 0 AND status = 'active' ORDER BY name`
  )
  return yield* Effect.forEach(rows, (r) =>
    Effect.map(secretOf(keys, r), (credential): Account => ({
      name: r.name,
      platform: r.platform,
      kind: r.kind,
      baseUrl: r.base_url,
      ...credential,
      groups: r.groups,
      priority: r.priority,
      concurrency: r.concurrency,
      modelMapping: r.model_mapping ?? undefined
    })))
})
