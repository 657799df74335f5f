/**
 * A settlement as one line of the journal: plain JSON, every field the store needs to charge it
 * as it would have been charged when the request ended (the principal as the request saw it: its
 * group's billing and rate, its key and user). Times are epoch milliseconds. A line that does not
 * decode (a line torn by a crash mid-write, an edit by hand) is reported, never guessed at.
 */
import { Result, Schema } from "effect"
import { KeyStatus, ModerationMode, Platform } from "../../domain/config.js"
import type { ApiKey, Group, Principal, User } from "../../domain/model.js"
import { ToolCallsSchema } from "../../domain/providerTools.js"
import type { Settlement } from "../../domain/settlement.js"

const Count = Schema.Number.check(Schema.isInt())
const Limit = Schema.optional(Count)

const KeyRecord = Schema.Struct({
  id: Schema.String,
  sha256: Schema.String,
  prefix: Schema.String,
  userName: Schema.String,
  groupName: Schema.String,
  status: KeyStatus,
  quotaMicros: Schema.optional(Count),
  quotaUsedMicros: Count,
  expiresAt: Schema.optional(Count),
  concurrency: Schema.optional(Count),
  rpmLimit: Limit,
  tpmLimit: Limit
})

const UserRecord = Schema.Struct({
  name: Schema.String,
  balanceMicros: Count,
  concurrency: Count,
  disabled: Schema.optional(Schema.Boolean),
  rpmLimit: Limit,
  tpmLimit: Limit
})

const GroupRecord = Schema.Struct({
  name: Schema.String,
  platform: Platform,
  billing: Schema.Literals(["balance", "subscription"]),
  allowImageGeneration: Schema.Boolean,
  rateMultiplier: Schema.Number,
  models: Schema.optional(Schema.Array(Schema.String)),
  moderation: ModerationMode,
  websocket: Schema.optional(Schema.Boolean),
  rpmLimit: Limit,
  tpmLimit: Limit
})

const SettlementRecord = Schema.Struct({
  v: Schema.Literal(1),
  requestId: Schema.String,
  model: Schema.String,
  at: Count,
  estimated: Schema.optional(Schema.Boolean),
  account: Schema.optional(Schema.String),
  usage: Schema.Struct({
    inputTokens: Count,
    outputTokens: Count,
    cacheReadTokens: Count,
    cacheCreationTokens: Count,
    reasoningTokens: Count,
    toolCalls: Schema.optionalKey(ToolCallsSchema)
  }),
  principal: Schema.Struct({ key: KeyRecord, user: UserRecord, group: GroupRecord })
})

const decodeRecord = Schema.decodeUnknownResult(SettlementRecord)

/** `undefined` fields are left out by JSON.stringify; `expiresAt` goes as epoch milliseconds. */
export const encodeLine = (s: Settlement): string =>
  JSON.stringify({
    v: 1,
    requestId: s.requestId,
    model: s.model,
    at: s.at.getTime(),
    estimated: s.estimated,
    account: s.account,
    usage: s.usage,
    principal: {
      key: { ...s.principal.key, expiresAt: s.principal.key.expiresAt?.getTime() },
      user: s.principal.user,
      group: s.principal.group
    }
  })

const limits = (r: { readonly rpmLimit?: number | undefined; readonly tpmLimit?: number | undefined }) => ({
  ...(r.rpmLimit === undefined ? {} : { rpmLimit: r.rpmLimit }),
  ...(r.tpmLimit === undefined ? {} : { tpmLimit: r.tpmLimit })
})

/** The settlement a line holds, or why it holds none. */
export const decodeLine = (line: string): Result.Result<Settlement, string> => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return Result.fail("not JSON")
  }
  return Result.mapBoth(decodeRecord(json), {
    onFailure: (e) => e.message,
    onSuccess: (r): Settlement => {
      const { group: g, key: k, user: u } = r.principal
      const key: ApiKey = {
        id: k.id,
        sha256: k.sha256,
        prefix: k.prefix,
        userName: k.userName,
        groupName: k.groupName,
        status: k.status,
        quotaMicros: k.quotaMicros,
        quotaUsedMicros: k.quotaUsedMicros,
        expiresAt: k.expiresAt === undefined ? undefined : new Date(k.expiresAt),
        concurrency: k.concurrency,
        ...limits(k)
      }
      const user: User = {
        name: u.name,
        balanceMicros: u.balanceMicros,
        concurrency: u.concurrency,
        ...(u.disabled === undefined ? {} : { disabled: u.disabled }),
        ...limits(u)
      }
      const group: Group = {
        name: g.name,
        platform: g.platform,
        billing: g.billing,
        allowImageGeneration: g.allowImageGeneration,
        rateMultiplier: g.rateMultiplier,
        models: g.models,
        moderation: g.moderation,
        ...(g.websocket === undefined ? {} : { websocket: g.websocket }),
        ...limits(g)
      }
      const principal: Principal = { key, user, group }
      return {
        requestId: r.requestId,
        principal,
        model: r.model,
        usage: r.usage,
        at: new Date(r.at),
        ...(r.estimated === undefined ? {} : { estimated: r.estimated }),
        ...(r.account === undefined ? {} : { account: r.account })
      }
    }
  })
}
