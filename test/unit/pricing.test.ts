/**
 * Prices from @pydantic/genai-prices: the snapshot is what the pinned package holds (upgrading
 * without `npm run prices:update` fails here), names map as the package's own calcPrice maps them,
 * long-context tiers and dated price changes apply, the default models are covered, and a request
 * nobody prices is counted in modelgate_unpriced_requests_total under its bounded model label.
 */
import { calcPrice } from "@pydantic/genai-prices"
import { Effect, Metric } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { extract, OUTPUT, render } from "../../scripts/genai-prices.js"
import { defaultModels } from "../../src/config/defaultModels.js"
import { genaiPrices } from "../../src/domain/genaiPrices.generated.js"
import type { PackageData } from "../../src/domain/packagePrices.js"
import { charge, packagePrices, packagePricesOf, quoteFor } from "../../src/domain/pricing.js"
import { emptyUsage, type TokenUsage } from "../../src/domain/usage.js"
import { settleUsage } from "../../src/core/settlement.js"
import { unpricedRequests } from "../../src/observability/metrics.js"
import * as QuotaMemory from "../../src/services/quota/memory.js"
import { Quota } from "../../src/services/quota/Quota.js"
import { testData } from "../support/gateway.js"
import { testPrincipal } from "../support/principal.js"

const usage = (partial: Partial<TokenUsage>): TokenUsage => ({ ...emptyUsage, ...partial })

describe("the price package snapshot", () => {
  it("is what the installed @pydantic/genai-prices holds, at the version package.json pins", () => {
    const pinned = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      devDependencies: Record<string, string>
    }).devDependencies["@pydantic/genai-prices"]
    expect(genaiPrices.version).toBe(pinned)
    const fresh = extract()
    expect(fresh).toEqual(genaiPrices)
    expect(readFileSync(OUTPUT, "utf8")).toBe(render(fresh))
  })

  it("prices what the package's own calcPrice prices, to the micro-dollar (tiers and cache prices included)", () => {
    const names = new Set(genaiPrices.providers.flatMap((p) => p.models.map((m) => m.id)))
    for (const name of Object.values(defaultModels).flat()) names.add(name)
    const usages = [
      usage({ inputTokens: 1000, cacheReadTokens: 200, cacheCreationTokens: 100, outputTokens: 500 }),
      usage({ inputTokens: 300_000, cacheReadTokens: 10_000, cacheCreationTokens: 5_000, outputTokens: 2_000 })
    ]
    const differ: Array<string> = []
    for (const name of names) {
      for (const u of usages) {
        const ours = charge(name, u, 1)
        const theirs = calcPrice(
          { input_tokens: u.inputTokens, cache_read_tokens: u.cacheReadTokens, cache_write_tokens: u.cacheCreationTokens, output_tokens: u.outputTokens },
          name
        )
        // Ours: unknown, or a price without an input price, is the fallback; the package says null or 0.
        const agrees = ours.priceFallback
          ? theirs === null || theirs.total_price === 0
          : theirs !== null && Math.abs(Math.round(theirs.total_price * 1e6) - ours.cost) <= 1
        if (!agrees) differ.push(`${name} ${u.inputTokens}: ${ours.cost} vs ${theirs?.total_price ?? "null"}`)
      }
    }
    expect(differ).toEqual([])
    expect(names.size).toBeGreaterThan(160)
  })

  it("covers the default models of the openai and anthropic platforms; antigravity's gemini-3*-high need a configured price", () => {
    const uncovered = Object.values(defaultModels).flat().filter((m) => quoteFor(m).source !== "package")
    expect([...new Set(uncovered)]).toEqual(["gemini-3-pro-high", "gemini-3.1-pro-high"])
    expect(quoteFor("claude-sonnet-4-5-thinking")).toMatchObject({ source: "package", name: "claude-sonnet-4-5" })
    expect(quoteFor("gemini-2.5-flash")).toMatchObject({ source: "package", name: "gemini-2.5-flash" })
    expect(packagePrices.models).toBe(165)
  })
})

describe("package prices", () => {
  it("apply the long-context tier to the whole request above its input-token threshold", () => {
    // gpt-5.4: 2.5 / 15 up to 272k input tokens, then 5 / 22.5 for all of them.
    expect(charge("gpt-5.4", usage({ inputTokens: 271_999, outputTokens: 1000 }), 1).cost).toBe(694_998) // 679_997.5 + 15_000, half up
    expect(charge("gpt-5.4", usage({ inputTokens: 272_000, outputTokens: 1000 }), 1).cost).toBe(1_360_000 + 22_500)
  })

  it("take a dated price change from its date, as of the start (the table is built once)", () => {
    const data: PackageData = {
      package: "test",
      version: "0",
      providers: [{
        id: "p",
        model_match: { starts_with: "m-" },
        models: [{
          id: "m-1",
          match: { equals: "m-1" },
          prices: [
            { prices: { input_mtok: 1, output_mtok: 2 } },
            { constraint: { type: "start_date", start_date: "2027-01-01" }, prices: { input_mtok: 3, output_mtok: 4 } }
          ]
        }]
      }]
    }
    const u = usage({ inputTokens: 1000, outputTokens: 1000 })
    expect(charge("m-1", u, 1, [], packagePricesOf(data, new Date("2026-12-31T23:59:59Z"))).cost).toBe(3_000)
    expect(charge("m-1", u, 1, [], packagePricesOf(data, new Date("2027-01-01T00:00:00Z"))).cost).toBe(7_000)
    // The provider is chosen by its model_match first: a name it does not take is not priced.
    expect(charge("x-1", u, 1, [], packagePricesOf(data, new Date())).priceFallback).toBe(true)
  })

  it("treat a cache price the package does not give as the input price, and a model with no input price as unpriced", () => {
    const data: PackageData = {
      package: "test",
      version: "0",
      providers: [{
        id: "p",
        model_match: { contains: "m" },
        models: [
          { id: "m-cheap", match: { equals: "m-cheap" }, prices: { input_mtok: 2, output_mtok: 1 } },
          { id: "m-audio", match: { equals: "m-audio" }, prices: {} }
        ]
      }]
    }
    const table = packagePricesOf(data, new Date())
    const u = usage({ inputTokens: 1000, cacheReadTokens: 300, cacheCreationTokens: 200, outputTokens: 10 })
    expect(charge("m-cheap", u, 1, [], table)).toEqual({ cost: 2_010, priceFallback: false })
    expect(charge("m-audio", u, 1, [], table).priceFallback).toBe(true)
    expect(table.models).toBe(1)
  })
})

describe("modelgate_unpriced_requests_total", () => {
  const count = (model: string) =>
    Effect.runSync(Metric.value(Metric.withAttributes(unpricedRequests, { model }))).count

  it("counts a settlement charged the fallback price under its bounded model label, and nothing else", async () => {
    const data = testData({ groups: [{ name: "g", platform: "openai" }], users: [{ name: "u", balance_usd: 10 }] })
    const quota = Effect.runSync(Effect.provide(Quota, QuotaMemory.layerTest(data)))
    const principal = testPrincipal()
    const settle = (requestId: string, model: string, metricModel: string) =>
      Effect.runPromise(settleUsage(quota, { requestId, principal, model, usage: usage({ inputTokens: 10, outputTokens: 5 }), at: new Date() }, metricModel))
    const before = { other: count("other"), known: count("gpt-5.4") }
    await settle("r-1", "made-up-model-1", "other")
    await settle("r-2", "made-up-model-2", "other")
    await settle("r-2", "made-up-model-2", "other") // a repeat: nothing charged, nothing counted
    await settle("r-3", "gpt-5.4", "gpt-5.4")
    expect(count("other") - before.other).toBe(2)
    expect(count("gpt-5.4") - before.known).toBe(0)
  })
})
