/**
 * Groups for operators: list, add, change. Groups the config file names are the file's (it
 * re-applies them at every start): changing them here is refused as `managed_by_config`. A change
 * reaches requests with the next key lookup (the principal carries its group).
 */
import { SqlClient } from "effect/sql"
import { Clock, Effect, Schema } from "effect"
import { AdminConflict, AdminNotFound } from "../../domain/adminErrors.js"
import type { Micros } from "../../domain/model.js"
import { ppm } from "../../domain/pricing.js"
import type { ProviderTool } from "../../domain/providerTools.js"
import { DbFlag, DbInt, DbIntOrNull, decodeRows, NameList, orStoreError, toolList } from "../rows.js"
import { type Actor, recordAudit } from "./audit.js"
import { forUpdate, inTransaction } from "./tx.js"

const GroupRow = Schema.Struct({
  name: Schema.String,
  platform: Schema.String,
  billing: Schema.String,
  allow_image_generation: DbFlag,
  rate_multiplier_ppm: DbInt,
  models: Schema.NullOr(Schema.fromJsonString(Schema.Array(Schema.String))),
  moderation: Schema.String,
  rpm_limit: DbIntOrNull,
  tpm_limit: DbIntOrNull,
  websocket: DbFlag,
  provider_tools: NameList,
  in_config: DbFlag
})
export type GroupRow = typeof GroupRow.Type

export const listGroups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* decodeRows(GroupRow)(
    yield* sql`SELECT name, platform, billing, allow_image_generation, rate_multiplier_ppm, models, moderation, rpm_limit,
        tpm_limit, websocket, provider_tools, in_config
      FROM groups ORDER BY name`
  )
}).pipe(orStoreError("listing groups failed"))

/** A group an operator adds: what the config file's `groups` entries say, limits in micro-dollars. */
export interface NewGroup {
  readonly name: string
  readonly platform: "openai" | "anthropic" | "antigravity" | "openai_chat"
  readonly billing: "balance" | "subscription"
  readonly allowImageGeneration: boolean
  readonly rateMultiplier: number
  readonly models: ReadonlyArray<string> | null
  readonly moderation: "off" | "observe" | "block"
  readonly dailyLimitMicros: Micros | null
  readonly weeklyLimitMicros: Micros | null
  readonly monthlyLimitMicros: Micros | null
  /** Requests / tokens per minute across the group's keys; null: no limit. */
  readonly rpmLimit: number | null
  readonly tpmLimit: number | null
  /** The Responses WebSocket transport is allowed for the group's keys; false: the upgrade is answered 426. */
  readonly websocket: boolean
  /** The provider tools (billed per call upstream) the group's requests may use; empty: none. */
  readonly providerTools: ReadonlyArray<ProviderTool>
}

/** Each field: absent leaves it (`null` removes a list or a limit). The platform is fixed at creation. */
export type GroupChange = Partial<Omit<NewGroup, "name" | "platform">>

/** `lock`: the row stays locked until the transaction ends (tx.ts forUpdate), for a change that rewrites it. */
const groupNamed = Effect.fnUntraced(function*(name: string, lock = false) {
  const sql = yield* SqlClient.SqlClient
  const select = sql`SELECT name, platform, billing, allow_image_generation, rate_multiplier_ppm, models, moderation, rpm_limit,
        tpm_limit, websocket, provider_tools, in_config
      FROM groups WHERE name = ${name}`
  return (yield* decodeRows(GroupRow)(yield* (lock ? forUpdate(sql, select) : select)))[0]
})

const LimitsRow = Schema.Struct({ daily_limit_micros: DbIntOrNull, weekly_limit_micros: DbIntOrNull, monthly_limit_micros: DbIntOrNull })

export const createGroup = (actor: Actor, g: NewGroup) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if ((yield* groupNamed(g.name)) !== undefined) {
      return yield* new AdminConflict({ message: `a group named '${g.name}' already exists`, code: "group_exists" })
    }
    yield* sql`INSERT INTO groups (name, platform, billing, allow_image_generation, rate_multiplier_ppm, models, moderation,
        daily_limit_micros, weekly_limit_micros, monthly_limit_micros, rpm_limit, tpm_limit, websocket, provider_tools, in_config,
        updated_at)
      VALUES (${g.name}, ${g.platform}, ${g.billing}, ${g.allowImageGeneration ? 1 : 0}, ${Number(ppm(g.rateMultiplier))},
        ${g.models === null ? null : JSON.stringify(g.models)}, ${g.moderation}, ${g.dailyLimitMicros}, ${g.weeklyLimitMicros},
        ${g.monthlyLimitMicros}, ${g.rpmLimit}, ${g.tpmLimit}, ${g.websocket ? 1 : 0}, ${toolList(g.providerTools)}, 0,
        ${(yield* Clock.currentTimeMillis)})`
    yield* recordAudit(actor, "group.create", g.name, { ...g })
    const row = yield* groupNamed(g.name)
    if (row === undefined) return yield* Effect.die(new Error("the group just created is gone"))
    return row
  }), "adding the group failed")

export const updateGroup = (actor: Actor, name: string, c: GroupChange) =>
  inTransaction(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const before = yield* groupNamed(name, true)
    if (before === undefined) return yield* new AdminNotFound({ message: `no group named '${name}'`, code: "group_not_found" })
    if (before.in_config) {
      return yield* new AdminConflict({
        message: `group '${name}' comes from the config file: change it there (the file is applied at every start)`,
        code: "managed_by_config"
      })
    }
    const limits = (yield* decodeRows(LimitsRow)(
      yield* sql`SELECT daily_limit_micros, weekly_limit_micros, monthly_limit_micros FROM groups WHERE name = ${name}`
    ))[0]
    const next = {
      billing: c.billing ?? before.billing,
      allow: c.allowImageGeneration ?? before.allow_image_generation,
      ppm: c.rateMultiplier === undefined ? before.rate_multiplier_ppm : Number(ppm(c.rateMultiplier)),
      models: c.models === undefined ? before.models : c.models,
      moderation: c.moderation ?? before.moderation,
      daily: c.dailyLimitMicros === undefined ? limits?.daily_limit_micros ?? null : c.dailyLimitMicros,
      weekly: c.weeklyLimitMicros === undefined ? limits?.weekly_limit_micros ?? null : c.weeklyLimitMicros,
      monthly: c.monthlyLimitMicros === undefined ? limits?.monthly_limit_micros ?? null : c.monthlyLimitMicros,
      rpm: c.rpmLimit === undefined ? before.rpm_limit : c.rpmLimit,
      tpm: c.tpmLimit === undefined ? before.tpm_limit : c.tpmLimit,
      websocket: c.websocket ?? before.websocket,
      tools: c.providerTools === undefined ? before.provider_tools : c.providerTools
    }
    yield* sql`UPDATE groups SET billing = ${next.billing}, allow_image_generation = ${next.allow ? 1 : 0},
        rate_multiplier_ppm = ${next.ppm}, models = ${next.models === null ? null : JSON.stringify(next.models)},
        moderation = ${next.moderation}, daily_limit_micros = ${next.daily}, weekly_limit_micros = ${next.weekly},
        monthly_limit_micros = ${next.monthly}, rpm_limit = ${next.rpm}, tpm_limit = ${next.tpm},
        websocket = ${next.websocket ? 1 : 0}, provider_tools = ${toolList(next.tools ?? undefined)},
        updated_at = ${(yield* Clock.currentTimeMillis)}
      WHERE name = ${name}`
    yield* recordAudit(actor, "group.update", name, { ...c })
    const row = yield* groupNamed(name)
    if (row === undefined) return yield* Effect.die(new Error("the group just changed is gone"))
    return row
  }), "changing the group failed")
