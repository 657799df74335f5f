/**
 * Price overrides for operators: list (the file's and the operator's), set one, remove one. A price
 * is USD per million tokens for a model name or a prefix ending in `*`; omitted cache prices are
 * the input price, as in the config file. The file's prices are the file's (it replaces them at
 * every start): setting or removing one here is refused as `managed_by_config`. A change applies
 * to settlements from then on; usage already settled keeps the cost it was charged.
 */
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { AdminConflict, AdminInvalid, AdminNotFound } from "../../domain/adminErrors.js"
import { picoPerToken } from "../../domain/pricing.js"
import { DbFlag, DbInt, decodeRows } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { inTransaction, storeErrorsBut } from "./tx.js"

const PriceRow = Schema.Struct({
  model: Schema.String,
  input_pico: DbInt,
  output_pico: DbInt,
  cache_read_pico: DbInt,
  cache_write_pico: DbInt,
  in_config: DbFlag,
  updated_at: DbInt
})
export type PriceRow = typeof PriceRow.Type

const SELECT = "SELECT model, input_pico, output_pico, cache_read_pico, cache_write_pico, in_config, updated_at FROM prices"

export const listPrices = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(PriceRow)(yield* sql`${sql.unsafe(SELECT)} ORDER BY model`)
}).pipe(storeErrorsBut("listing prices failed"))

/** USD per million tokens. */
export interface NewPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number | undefined
  readonly cacheWrite?: number | undefined
}

/**
 * A model name as providers spell them: a letter or digit, then letters, digits and . _ - : / @
 * (claude-sonnet-4-5@20250929, openai/gpt-4o, ft:gpt-4o-mini:org:id), 100 characters at most (the
 * admin API's router takes no longer path segment). Nothing that reads as a formula in the usage CSV,
 * no spaces, quotes or control characters.
 */
export const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,99}$/

/** A price's name: a model name, or a prefix of one ending in a single `*` (100 characters in all). */
const PRICE_MODEL = /^(?=.{1,100}$)[A-Za-z0-9][A-Za-z0-9._:/@-]*\*?$/

const priceNamed = Effect.fnUntraced(function*(model: string) {
  const sql = yield* SqlClient.SqlClient
  return (yield* decodeRows(PriceRow)(yield* sql`${sql.unsafe(SELECT)} WHERE model = ${model}`))[0]
})

const fromFile = (model: string) =>
  new AdminConflict({
    message: `the price of '${model}' comes from the config file: change it there (the file is applied at every start)`,
    code: "managed_by_config"
  })

export const putPrice = (actor: Actor, model: string, p: NewPrice) =>
  inTransaction(Effect.gen(function*() {
    if (!PRICE_MODEL.test(model)) {
      return yield* new AdminInvalid({
        message: "model must be a model name (a letter or digit, then letters, digits and . _ - : / @, at most 100 characters) or a prefix of one ending in a single *",
        code: "invalid_model",
        param: "model"
      })
    }
    const sql = yield* SqlClient.SqlClient
    const before = yield* priceNamed(model)
    if (before?.in_config === true) return yield* fromFile(model)
    const pico = {
      input: Number(picoPerToken(p.input)),
      output: Number(picoPerToken(p.output)),
      cacheRead: Number(picoPerToken(p.cacheRead ?? p.input)),
      cacheWrite: Number(picoPerToken(p.cacheWrite ?? p.input))
    }
    const at = yield* Clock.currentTimeMillis
    yield* sql`INSERT INTO prices (model, input_pico, output_pico, cache_read_pico, cache_write_pico, in_config, updated_at)
      VALUES (${model}, ${pico.input}, ${pico.output}, ${pico.cacheRead}, ${pico.cacheWrite}, 0, ${at})
      ON CONFLICT (model) DO UPDATE SET input_pico = excluded.input_pico, output_pico = excluded.output_pico,
        cache_read_pico = excluded.cache_read_pico, cache_write_pico = excluded.cache_write_pico, updated_at = excluded.updated_at`
    yield* recordAudit(actor, before === undefined ? "price.create" : "price.update", model, {
      input_pico: [before?.input_pico ?? null, pico.input],
      output_pico: [before?.output_pico ?? null, pico.output],
      cache_read_pico: [before?.cache_read_pico ?? null, pico.cacheRead],
      cache_write_pico: [before?.cache_write_pico ?? null, pico.cacheWrite]
    })
    const after = yield* priceNamed(model)
    if (after === undefined) return yield* Effect.die(new Error("the price just written is gone"))
    return after
  }), "setting the price failed")

export const deletePrice = (actor: Actor, model: string) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* priceNamed(model)
    if (before === undefined) return yield* new AdminNotFound({ message: `no price set for '${model}'`, code: "price_not_found" })
    if (before.in_config) return yield* fromFile(model)
    yield* sql`DELETE FROM prices WHERE model = ${model}`
    yield* recordAudit(actor, "price.delete", model, { input_pico: before.input_pico, output_pico: before.output_pico })
  }), "removing the price failed")
