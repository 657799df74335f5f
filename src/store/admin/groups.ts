/** Groups for operators: read only for now (the config file defines them). */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { DbFlag, DbInt, decodeRows, orStoreError } from "../rows.js"

const GroupRow = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  billing: Schema.String,
  allow_image_generation: DbFlag,
  rate_multiplier_ppm: DbInt,
  models: Schema.NullOr(Schema.parseJson(Schema.Array(Schema.String))),
  moderation: Schema.String,
  in_config: DbFlag
})
export type GroupRow = typeof GroupRow.Type

export const listGroups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(GroupRow)(
    yield* sql`SELECT name, platform, billing, allow_image_generation, rate_multiplier_ppm, models, moderation, in_config
      FROM groups ORDER BY name`
  )
}).pipe(orStoreError("listing groups failed"))
