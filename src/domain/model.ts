/**
 * The runtime data model the services speak: resolved from config (or a database) and independent of
 * where it is stored. Money is integer micro-dollars so sums stay exact.
 */
import type { Redacted } from "effect"
import type { KeyStatus, ModerationMode, Platform } from "./config.js"
import type { ProviderTool } from "./providerTools.js"

export type { KeyStatus, ModerationMode, Platform }

export type Micros = number

export const usdToMicros = (usd: number): Micros => Math.round(usd * 1_000_000)
export const microsToUsd = (m: Micros): number => m / 1_000_000

/**
 * Requests and tokens per minute a key, user or group may use; absent = no limit.
 * Enforced by the RateLimits service on every responses request.
 */
export interface MinuteLimits {
  readonly rpmLimit?: number | undefined
  readonly tpmLimit?: number | undefined
}

export interface Group extends MinuteLimits {
  readonly name: string
  readonly platform: Platform
  readonly billing: "balance" | "subscription"
  readonly allowImageGeneration: boolean
  /** Provider tools (billed per call upstream) the group's requests may use; absent: none. */
  readonly allowProviderTools?: ReadonlyArray<ProviderTool> | undefined
  readonly rateMultiplier: number
  readonly models: ReadonlyArray<string> | undefined
  readonly moderation: ModerationMode
  /**
   * The Responses WebSocket transport is allowed for the group's keys; false: the upgrade
   * is answered 426 so clients fall back to HTTP. Absent: allowed.
   */
  readonly websocket?: boolean | undefined
}

export interface User extends MinuteLimits {
  readonly name: string
  readonly balanceMicros: Micros
  readonly concurrency: number
  /** Disabled by an operator: none of the user's keys is admitted. */
  readonly disabled?: boolean
}

export interface ApiKey extends MinuteLimits {
  /** Stable, unique identifier: the configured name, else derived from the hash (never the key). */
  readonly id: string
  readonly sha256: string
  /** A short visible prefix (e.g. `sk-demo…`) for logs and listings; never the whole key. */
  readonly prefix: string
  readonly userName: string
  readonly groupName: string
  readonly status: KeyStatus
  readonly quotaMicros: Micros | undefined
  readonly quotaUsedMicros: Micros
  readonly expiresAt: Date | undefined
  readonly concurrency: number | undefined
}

export interface Account {
  readonly name: string
  readonly platform: Platform
  readonly kind: "http" | "simulator"
  readonly baseUrl: string
  readonly secret: Redacted.Redacted<string> | undefined
  /** Where `secret` comes from: an environment variable, or the database (sealed, an operator's account); none for a simulator. */
  readonly keySource?: "env" | "stored"
  readonly groups: ReadonlyArray<string>
  readonly priority: number
  readonly concurrency: number
  readonly modelMapping: Readonly<Record<string, string>> | undefined
  /**
   * OpenAI accounts only: sent as `OpenAI-Organization` / `OpenAI-Project` with every request to
   * this account (a client's own are never forwarded). Config-file accounts only for now: an
   * operator's accounts (admin API, database) do not store them yet.
   */
  readonly openaiOrganization?: string
  readonly openaiProject?: string
  /** Headers the account's config adds to every request (config-file accounts only, as above). */
  readonly extraHeaders?: Readonly<Record<string, string>>
}

/** Who is calling: the key with its user and group, as resolved by KeyRepo. */
export interface Principal {
  readonly key: ApiKey
  readonly user: User
  readonly group: Group
}

/** The model an account should be asked for, given what the client requested. */
export const upstreamModel = (account: Account, requested: string): string =>
  account.modelMapping?.[requested] ?? requested

/** An account serves a model when it has no mapping (serves all) or the mapping names it. */
export const accountServes = (account: Account, model: string): boolean =>
  account.modelMapping === undefined || Object.keys(account.modelMapping).length === 0 || model in account.modelMapping

/**
 * Whether a group serves a model: its configured list decides when it has one; otherwise some
 * account must serve it (an account without a mapping serves any model name). A group with no
 * accounts at all offers everything, and the scheduler then answers 503 no_accounts_configured.
 */
export const offersModel = (group: Group, accounts: ReadonlyArray<Account>, model: string): boolean => {
  if (group.models !== undefined && group.models.length > 0) return group.models.includes(model)
  return accounts.length === 0 || accounts.some((a) => accountServes(a, model))
}
