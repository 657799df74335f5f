/**
 * The upstream accounts an operator added through the admin API (accounts.in_config = 0), as the
 * scheduler uses them: the credential is read from the environment variable the row names (the
 * database never holds a secret). The config file's accounts come from the loaded file instead.
 */
import { SqlClient } from "effect/sql"
import { Config, Effect, Option, Schema } from "effect"
import { Platform } from "../domain/config.js"
import type { Account } from "../domain/model.js"
import { DbInt, decodeRows } from "./rows.js"

const AccountRow = Schema.Struct({
  name: Schema.String,
  platform: Platform,
  kind: Schema.Literals(["http", "simulator"]),
  base_url: Schema.String,
  secret_env: Schema.NullOr(Schema.String),
  groups: Schema.fromJsonString(Schema.Array(Schema.String)),
  priority: DbInt,
  concurrency: DbInt,
  model_mapping: Schema.NullOr(Schema.fromJsonString(Schema.Record(Schema.String, Schema.String)))
})

export const operatorAccounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* decodeRows(AccountRow)(
    yield* sql`SELECT name, platform, kind, base_url, secret_env, groups, priority, concurrency, model_mapping
      FROM accounts WHERE in_config = 0 AND status = 'active' ORDER BY name`
  )
  return yield* Effect.forEach(rows, (r) =>
    Effect.map(
      r.secret_env === null ? Effect.succeed(Option.none()) : Effect.orElseSucceed(Config.option(Config.Redacted(r.secret_env)), () => Option.none()),
      (secret): Account => ({
        name: r.name,
        platform: r.platform,
        kind: r.kind,
        baseUrl: r.base_url,
        secret: Option.getOrUndefined(secret),
        groups: r.groups,
        priority: r.priority,
        concurrency: r.concurrency,
        modelMapping: r.model_mapping ?? undefined
      })
    ))
})
