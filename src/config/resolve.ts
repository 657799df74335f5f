/**
 * Turns a decoded config file into the runtime model: keys hashed, references checked (references.ts),
 * secrets read from the environment. Every problem names the field it is about.
 */
import { hash } from "node:crypto"
import { Redacted, Result } from "effect"
import type { GatewayConfig, Platform } from "../domain/config.js"
import { type Account, type ApiKey, type Group, type User, usdToMicros } from "../domain/model.js"
import type { ModerationConfig } from "../domain/moderationConfig.js"
import type { PriceRule, PriceTable } from "../domain/pricing.js"
import { type ToolPrices, toolPricesOf } from "../domain/providerTools.js"
import type { Subscription, WindowLimits } from "../domain/subscription.js"
import { ruleProblems } from "../domain/moderationRules.js"
import { defaultModels } from "./defaultModels.js"
import { referenceProblems } from "./references.js"

export interface GatewayData {
  readonly groups: ReadonlyMap<string, Group>
  readonly users: ReadonlyMap<string, User>
  readonly keys: ReadonlyArray<ApiKey>
  readonly accounts: ReadonlyArray<Account>
  readonly defaultModels: Readonly<Record<Platform, ReadonlyArray<string>>>
  readonly moderation: ModerationConfig
  /** Subscription window limits per group name. */
  readonly windowLimits: ReadonlyMap<string, WindowLimits>
  readonly subscriptions: ReadonlyArray<Subscription>
  /** Config price overrides (the bundled table applies to anything they do not match). */
  readonly prices: PriceTable
  /** Per-call prices of provider tools: the config's `tool_prices` over the defaults. */
  readonly toolPrices: ToolPrices
  /** Account name -> the environment variable its secret comes from (stored as a reference, never the value). */
  readonly accountSecretEnv: ReadonlyMap<string, string>
}

export const sha256Hex = (s: string): string => hash("sha256", s, "hex")

/** The visible part of a key: enough to recognise it in a listing, never enough to use it. */
export const keyPrefix = (key: string): string => `${key.slice(0, Math.min(8, Math.floor(key.length / 3)))}…`

/** The id of a key without a name: hash-derived, so it is stable across restarts and does not collide. */
export const keyIdFromHash = (sha256: string): string => `key-${sha256.slice(0, 16)}`

/** Where an account of each platform is called when it names no base_url. */
export const defaultBaseUrl: Record<Platform, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
  antigravity: "https://api.anthropic.com",
  // No default: an OpenAI-compatible server is wherever the operator runs it (resolve requires base_url).
  openai_chat: ""
}

/** Headers an account's config may not set: the credential, and what the HTTP layer owns. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  "authorization", "x-api-key", "host", "content-length", "content-type", "transfer-encoding", "connection", "accept"
])

const limitMicros = (usd: number | undefined) => (usd === undefined || usd === 0 ? undefined : usdToMicros(usd))

export const resolveConfig = (
  config: GatewayConfig,
  env: Readonly<Record<string, string | undefined>>
): Result.Result<GatewayData, ReadonlyArray<string>> => {
  const problems: Array<string> = []
  const groups = new Map<string, Group>()
  const windowLimits = new Map<string, WindowLimits>()
  config.groups.forEach((g, i) => {
    if (groups.has(g.name)) problems.push(`groups[${i}].name: duplicate group '${g.name}'`)
    groups.set(g.name, {
      name: g.name,
      platform: g.platform,
      billing: g.billing,
      allowImageGeneration: g.allow_image_generation,
      allowProviderTools: g.allow_provider_tools,
      rateMultiplier: g.rate_multiplier,
      models: g.models,
      moderation: g.moderation,
      rpmLimit: g.rpm_limit,
      tpmLimit: g.tpm_limit,
      websocket: g.websocket
    })
    windowLimits.set(g.name, {
      daily: limitMicros(g.daily_limit_usd),
      weekly: limitMicros(g.weekly_limit_usd),
      monthly: limitMicros(g.monthly_limit_usd)
    })
  })
  const users = new Map<string, User>()
  config.users.forEach((u, i) => {
    if (users.has(u.name)) problems.push(`users[${i}].name: duplicate user '${u.name}'`)
    users.set(u.name, {
      name: u.name,
      balanceMicros: usdToMicros(u.balance_usd),
      concurrency: u.concurrency,
      rpmLimit: u.rpm_limit,
      tpmLimit: u.tpm_limit
    })
  })
  problems.push(...referenceProblems(config))
  const seenHashes = new Set<string>()
  const keys: Array<ApiKey> = []
  config.keys.forEach((k, i) => {
    const at = `keys[${i}]`
    if ((k.key === undefined) === (k.key_sha256 === undefined)) {
      problems.push(`${at}: exactly one of 'key' or 'key_sha256' is required`)
      return
    }
    const sha256 = k.key !== undefined ? sha256Hex(k.key) : k.key_sha256!
    if (seenHashes.has(sha256)) problems.push(`${at}: duplicate key`)
    seenHashes.add(sha256)
    const prefix = k.key !== undefined ? keyPrefix(k.key) : `sha256:${sha256.slice(0, 8)}…`
    // Usage and quota are counted per id, so it must be unique: visible prefixes often collide
    // (every key starting `sk-proj-`), a prefix of the hash does not.
    const id = k.name ?? keyIdFromHash(sha256)
    if (k.name !== undefined && keys.some((other) => other.id === id)) {
      problems.push(`${at}.name: duplicate key name '${id}'`)
    }
    keys.push({
      id,
      sha256,
      prefix,
      userName: k.user,
      groupName: k.group,
      status: k.status,
      quotaMicros: k.quota_usd === undefined ? undefined : usdToMicros(k.quota_usd),
      quotaUsedMicros: 0,
      expiresAt: k.expires_at,
      concurrency: k.concurrency,
      rpmLimit: k.rpm_limit,
      tpmLimit: k.tpm_limit
    })
  })
  const accounts: Array<Account> = []
  const accountSecretEnv = new Map<string, string>()
  config.accounts.forEach((a, i) => {
    const at = `accounts[${i}]`
    if (accounts.some((b) => b.name === a.name)) problems.push(`${at}.name: duplicate account '${a.name}'`)
    let secret: Redacted.Redacted<string> | undefined
    if (a.api_key_env !== undefined) accountSecretEnv.set(a.name, a.api_key_env)
    if (a.api_key_env !== undefined) {
      const value = env[a.api_key_env]
      if (value === undefined || value === "") {
        problems.push(`${at}.api_key_env: environment variable ${a.api_key_env} is not set`)
      } else secret = Redacted.make(value)
    } else if (a.kind === "http" && a.platform !== "openai_chat") {
      // A local OpenAI-compatible server (Ollama, vLLM, llama.cpp) often takes no key.
      problems.push(`${at}.api_key_env: required for an http account (name the environment variable holding its key)`)
    }
    if (a.platform === "openai_chat" && a.kind === "http" && a.base_url === undefined) {
      problems.push(`${at}.base_url: required for an openai_chat account (the server's OpenAI-compatible URL, e.g. http://127.0.0.1:11434/v1)`)
    }
    if (a.platform === "openai_chat" && a.kind === "simulator") problems.push(`${at}.kind: the simulator speaks Responses and Messages, not openai_chat`)
    const reserved = Object.keys(a.headers ?? {}).filter((h) => RESERVED_HEADERS.has(h.toLowerCase()))
    if (reserved.length > 0) problems.push(`${at}.headers: ${reserved.join(", ")} cannot be set here (the gateway sets it)`)
    for (const field of ["openai_organization", "openai_project"] as const) {
      if (a[field] !== undefined && a.platform !== "openai") problems.push(`${at}.${field}: only for accounts on the openai platform`)
    }
    accounts.push({
      name: a.name,
      platform: a.platform,
      kind: a.kind,
      baseUrl: (a.base_url ?? defaultBaseUrl[a.platform]).replace(/\/+$/, ""),
      secret,
      ...(a.api_key_env === undefined ? {} : { keySource: "env" as const }),
      groups: a.groups,
      priority: a.priority,
      concurrency: a.concurrency,
      modelMapping: a.model_mapping,
      ...(a.openai_organization === undefined ? {} : { openaiOrganization: a.openai_organization }),
      ...(a.openai_project === undefined ? {} : { openaiProject: a.openai_project }),
      ...(a.headers === undefined ? {} : { extraHeaders: Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k.toLowerCase(), v])) })
    })
  })
  problems.push(...ruleProblems(config.moderation.rules))
  if (config.moderation.provider === "openai") {
    const name = config.moderation.openai?.account
    const account = accounts.find((a) => a.name === name)
    if (name === undefined) problems.push("moderation.openai.account: required when moderation.provider is openai")
    else if (account !== undefined && (account.platform !== "openai" || account.kind !== "http")) {
      problems.push(`moderation.openai.account: '${name}' must be an http account on the openai platform`)
    }
  }
  const subscriptions: Array<Subscription> = []
  const seenSubs = new Set<string>()
  ;(config.subscriptions ?? []).forEach((sub, i) => {
    const at = `subscriptions[${i}]`
    const group = groups.get(sub.group)
    if (group !== undefined && group.billing !== "subscription") {
      problems.push(`${at}.group: group '${sub.group}' bills by balance; subscriptions need billing: subscription`)
    }
    const id = `${sub.user}\u0000${sub.group}`
    if (seenSubs.has(id)) problems.push(`${at}: duplicate subscription of '${sub.user}' to '${sub.group}'`)
    seenSubs.add(id)
    subscriptions.push({
      userName: sub.user,
      groupName: sub.group,
      status: sub.status,
      startsAt: sub.starts_at,
      expiresAt: sub.expires_at
    })
  })
  const prices: Array<PriceRule> = []
  ;(config.prices ?? []).forEach((p, i) => {
    if (prices.some((q) => q.model === p.model)) problems.push(`prices[${i}].model: duplicate price for '${p.model}'`)
    prices.push({
      model: p.model,
      price: { input: p.input, output: p.output, cacheRead: p.cache_read ?? p.input, cacheWrite: p.cache_write ?? p.input }
    })
  })
  if (problems.length > 0) return Result.fail(problems)
  return Result.succeed({
    groups,
    users,
    keys,
    accounts,
    windowLimits,
    subscriptions,
    prices,
    toolPrices: toolPricesOf(config.tool_prices),
    accountSecretEnv,
    moderation: config.moderation,
    defaultModels: {
      openai: config.default_models?.openai ?? defaultModels.openai,
      anthropic: config.default_models?.anthropic ?? defaultModels.anthropic,
      antigravity: config.default_models?.antigravity ?? defaultModels.antigravity,
      openai_chat: config.default_models?.openai_chat ?? defaultModels.openai_chat
    }
  })
}
