/**
 * Prompt-cache figures per upstream account and per key: settlement splits the input tokens into
 * read-from-cache and not (modelgate_input_tokens_total, modelgate_key_input_tokens_total), and the
 * admin views turn them into the cache-hit ratio the dashboard shows.
 */
import { Effect, Metric } from "effect"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { describe, expect, it } from "vitest"
import { cacheHitRatio, accountView, usageRowView } from "../../src/admin/views.js"
import { emptyUsage, type TokenUsage } from "../../src/domain/usage.js"
import type { Account } from "../../src/domain/model.js"
import { settleUsage } from "../../src/core/settlement.js"
import { inputTokensByAccount, inputTokensByKey } from "../../src/observability/metrics.js"
import * as QuotaMemory from "../../src/services/quota/memory.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { testData } from "../support/gateway.js"
import { testPrincipal } from "../support/principal.js"

const usage = (partial: Partial<TokenUsage>): TokenUsage => ({ ...emptyUsage, ...partial })

const data = testData({ groups: [{ name: "g", platform: "anthropic" }], users: [{ name: "u", balance_usd: 10 }] })
const quota = Effect.runSync(Effect.provide(Quota, QuotaMemory.layerTest(data)))

let nextId = 0
/** Settles `u` for `key` as answered by `account`, as the core does after an answer. */
const settle = (u: TokenUsage, key: string, account: string | undefined, estimated = false) => {
  const settlement = {
    requestId: `r-cache-${nextId++}`,
    principal: testPrincipal({ key }),
    model: "claude-sonnet-4-5",
    usage: u,
    ...(account === undefined ? {} : { account }),
    at: new Date()
  }
  return Effect.runPromise(settleUsage(quota, estimated ? { ...settlement, estimated } : settlement, "claude-sonnet-4-5"))
}

const count = (metric: Metric.Counter<number>, attributes: Record<string, string>) =>
  Effect.runSync(Metric.value(Metric.withAttributes(metric, attributes))).count

const account = (name: string): Account => ({
  name,
  platform: "anthropic",
  kind: "http",
  baseUrl: "https://api.anthropic.com",
  secret: undefined,
  groups: ["g"],
  priority: 0,
  concurrency: 4,
  modelMapping: undefined
})

describe("input tokens by cache, per account and per key", () => {
  it("settlement counts cached reads and the rest under the answering account and the key", async () => {
    await settle(usage({ inputTokens: 1000, cacheReadTokens: 800, cacheCreationTokens: 150, outputTokens: 20 }), "team-a", "acct-cache-1")
    await settle(usage({ inputTokens: 500, outputTokens: 20 }), "team-a", "acct-cache-1")
    await settle(usage({ inputTokens: 300, cacheReadTokens: 300 }), "team-b", "acct-cache-2")
    expect(count(inputTokensByAccount, { account: "acct-cache-1", cache: "read" })).toBe(800)
    // Cache writes are processed input, not reads.
    expect(count(inputTokensByAccount, { account: "acct-cache-1", cache: "uncached" })).toBe(700)
    expect(count(inputTokensByAccount, { account: "acct-cache-2", cache: "read" })).toBe(300)
    expect(count(inputTokensByKey, { key: "team-a", cache: "read" })).toBe(800)
    expect(count(inputTokensByKey, { key: "team-a", cache: "uncached" })).toBe(700)
    expect(count(inputTokensByKey, { key: "team-b", cache: "uncached" })).toBe(0)
  })

  it("shows in the Prometheus scrape", async () => {
    await settle(usage({ inputTokens: 40, cacheReadTokens: 10 }), "team-scrape", "acct-scrape")
    const text = await Effect.runPromise(PrometheusMetrics.format())
    expect(text).toMatch(/^modelgate_input_tokens_total\{account="acct-scrape",cache="read"\} 10$/m)
    expect(text).toMatch(/^modelgate_input_tokens_total\{account="acct-scrape",cache="uncached"\} 30$/m)
    expect(text).toMatch(/^modelgate_key_input_tokens_total\{key="team-scrape",cache="read"\} 10$/m)
  })

  it("a key without a name is labelled by an alias, never by its hash-derived id", async () => {
    await settle(usage({ inputTokens: 10, cacheReadTokens: 5 }), "key-0123456789abcdef", "acct-alias")
    const text = await Effect.runPromise(PrometheusMetrics.format())
    expect(text).not.toContain("key-0123456789abcdef")
    expect(text).toMatch(/^modelgate_key_input_tokens_total\{key="key-[0-9a-f]{12}",cache="read"\} 5$/m)
  })

  it("without an account only the key is counted; an estimated usage is not counted at all", async () => {
    await settle(usage({ inputTokens: 70, cacheReadTokens: 7 }), "team-noacct", undefined)
    expect(count(inputTokensByKey, { key: "team-noacct", cache: "read" })).toBe(7)
    await settle(usage({ inputTokens: 90 }), "team-estimated", "acct-estimated", true)
    expect(count(inputTokensByKey, { key: "team-estimated", cache: "uncached" })).toBe(0)
    expect(count(inputTokensByAccount, { account: "acct-estimated", cache: "uncached" })).toBe(0)
  })
})

describe("cache-hit ratio in the admin views", () => {
  it("an account row carries its input tokens, cached reads and their ratio (its usage row by account)", () => {
    const health = { account: account("acct-view"), inUse: 0, waiting: 0, coolingDownUntil: undefined, takenOut: false }
    expect(accountView(health, undefined)).toMatchObject({ name: "acct-view", input_tokens: 0, cache_read_tokens: 0, cache_hit_ratio: null })
    const row = { bucket: "acct-view", requests: 1, input_tokens: 400, output_tokens: 3, cache_read_tokens: 300, cache_creation_tokens: 0, cost_micros: 1 }
    expect(accountView(health, row)).toMatchObject({ input_tokens: 400, cache_read_tokens: 300, cache_hit_ratio: 0.75 })
  })

  it("a usage row (per key, per model...) carries the ratio of its stored totals", () => {
    const row = { bucket: "team-a", requests: 2, input_tokens: 2000, output_tokens: 10, cache_read_tokens: 1500, cache_creation_tokens: 0, cost_micros: 10 }
    expect(usageRowView(row).cache_hit_ratio).toBe(0.75)
    expect(usageRowView({ ...row, input_tokens: 0, cache_read_tokens: 0 }).cache_hit_ratio).toBeNull()
  })

  it("the ratio stays within 0..1 even for an upstream that reports more reads than input", () => {
    expect(cacheHitRatio(100, 0)).toBe(0)
    expect(cacheHitRatio(100, 250)).toBe(1)
    expect(cacheHitRatio(0, 5)).toBeNull()
  })
})
