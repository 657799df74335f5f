/**
 * The pure pieces under the store: DATABASE_URL rules, exact pricing, subscription windows, the
 * UTC day a usage row is filed under, the shared eligibility rules, CLI money.
 */
import { Cause, Effect, Exit, Redacted, Result } from "effect"
import { describe, expect, it } from "vitest"
import { formatUsd, parseUsd } from "../../src/domain/money.js"
import type { Principal } from "../../src/domain/model.js"
import { charge, costMicros, quoteFor } from "../../src/domain/pricing.js"
import { addSpend, emptySpends, usedIn, windowEnd, windowStart } from "../../src/domain/subscription.js"
import { emptyUsage } from "../../src/domain/usage.js"
import { dayOf } from "../../src/domain/usageReport.js"
import { eligibility } from "../../src/services/quota/eligibility.js"
import { describeTarget, parseDatabaseUrl } from "../../src/store/target.js"
import { testPrincipal } from "../support/principal.js"

describe("DATABASE_URL", () => {
  const parse = (url: string | undefined) => Result.getOrThrow(parseDatabaseUrl(url))

  it("defaults to ./data/modelgate.db and accepts sqlite: URLs and plain paths", () => {
    expect(parse(undefined)).toEqual({ _tag: "Sqlite", filename: "./data/modelgate.db" })
    expect(parse("")).toEqual({ _tag: "Sqlite", filename: "./data/modelgate.db" })
    expect(parse("sqlite:data/x.db")).toEqual({ _tag: "Sqlite", filename: "data/x.db" })
    expect(parse("sqlite:///var/lib/mg.db")).toEqual({ _tag: "Sqlite", filename: "/var/lib/mg.db" })
    expect(parse("sqlite::memory:")).toEqual({ _tag: "Sqlite", filename: ":memory:" })
    expect(parse("/srv/mg.db")).toEqual({ _tag: "Sqlite", filename: "/srv/mg.db" })
    expect(parse("data/mg.sqlite")).toEqual({ _tag: "Sqlite", filename: "data/mg.sqlite" })
    expect(parse("mg.SQLITE3")).toEqual({ _tag: "Sqlite", filename: "mg.SQLITE3" })
    expect(parse(":memory:")).toEqual({ _tag: "Sqlite", filename: ":memory:" })
  })

  it("refuses a value that is neither a URL nor a SQLite file name, showing it only when it holds no password", () => {
    expect(parseDatabaseUrl("garbage")).toEqual(Result.fail(expect.stringMatching(/^DATABASE_URL=garbage is neither a postgres:\/\/ URL nor a SQLite file/)))
    expect(Result.isFailure(parseDatabaseUrl("./data/modelgate"))).toBe(true)
    const typo = parseDatabaseUrl("gateway:s3cret@db.internal/modelgate")
    expect(Result.isFailure(typo)).toBe(true)
    expect(JSON.stringify(typo)).not.toContain("s3cret")
  })

  it("takes postgres:// and postgresql://, turns schema= into a search_path, never logs the password", () => {
    const pg = parse("postgresql://u:secret@db:5432/mg?schema=tenant_1")
    expect(pg._tag).toBe("Postgres")
    if (pg._tag !== "Postgres") return
    expect(Redacted.value(pg.url)).toContain("options=-c+search_path%3Dtenant_1")
    expect(describeTarget(pg)).not.toContain("secret")
    expect(String(pg.url)).not.toContain("secret")
    expect(parse("postgres://db/mg")._tag).toBe("Postgres")
  })

  it("refuses other schemes and unsafe schema names", () => {
    expect(Result.isFailure(parseDatabaseUrl("mysql://db/x"))).toBe(true)
    expect(Result.isFailure(parseDatabaseUrl("postgres://db/x?schema=a;drop"))).toBe(true)
  })
})

describe("pricing", () => {
  const u = { ...emptyUsage, inputTokens: 1000, outputTokens: 100 }

  it("prices a model only the price package knows at the package's price", () => {
    expect(quoteFor("gpt-5.4")).toMatchObject({ source: "package", name: "gpt-5.4" })
    expect(charge("gpt-5.4", u, 1)).toEqual({ cost: 4_000, priceFallback: false }) // 1000 x 2.5 + 100 x 15
    expect(charge("gpt-5.4-mini", u, 1)).toEqual({ cost: 1_200, priceFallback: false }) // 1000 x 0.75 + 100 x 4.5
    expect(quoteFor("claude-haiku-4-5-20251001")).toMatchObject({ source: "package", name: "claude-haiku-4-5" })
  })

  it("lets an override (the config's or an operator's: one table) win over the package: an exact name, then the longest prefix", () => {
    const overrides = [
      { model: "gpt-5*", price: { input: 9, output: 9, cacheRead: 9, cacheWrite: 9 } },
      { model: "gpt-5.4", price: { input: 1, output: 1, cacheRead: 1, cacheWrite: 1 } }
    ]
    expect(quoteFor("gpt-5.4", overrides)).toMatchObject({ source: "override", name: "gpt-5.4" })
    expect(charge("gpt-5.4", u, 1, overrides)).toEqual({ cost: 1_100, priceFallback: false })
    // A prefix override beats the package's exact entry for gpt-5.4-mini.
    expect(quoteFor("gpt-5.4-mini", overrides)).toMatchObject({ source: "override", name: "gpt-5*" })
    expect(charge("gpt-5.4-mini", u, 1, overrides).cost).toBe(9_900)
    // Overrides naming other models leave the package's prices alone.
    expect(quoteFor("claude-opus-4-7", overrides)).toMatchObject({ source: "package", name: "claude-opus-4-7" })
  })

  it("charges a model nobody prices the fallback price (never free), flagged", () => {
    expect(quoteFor("who-knows")).toMatchObject({ source: "fallback" })
    // 1000 x 3 + 100 x 15, x 2
    expect(charge("who-knows", u, 2)).toEqual({ cost: 9_000, priceFallback: true })
    expect(charge("who-knows", u, 2, [{ model: "who-*", price: { input: 1, output: 1, cacheRead: 1, cacheWrite: 1 } }]))
      .toEqual({ cost: 2_200, priceFallback: false })
  })

  it("computes in exact decimals and rounds once, half up", () => {
    const round = [{ model: "m", price: { input: 1.15, output: 0, cacheRead: 0, cacheWrite: 0 } }]
    // 10 x 1.15 = 11.5 micros; binary floats make it 11.499999999999998.
    expect(costMicros("m", { ...emptyUsage, inputTokens: 10 }, 1, round)).toBe(12)
    // 3 x 0.1 x 1.5 = 0.45 -> 0; the multiplier applies before the single rounding.
    const tenth = [{ model: "m", price: { input: 0.1, output: 0, cacheRead: 0, cacheWrite: 0 } }]
    expect(costMicros("m", { ...emptyUsage, inputTokens: 3 }, 1.5, tenth)).toBe(0)
    expect(costMicros("m", { ...emptyUsage, inputTokens: 5 }, 1, tenth)).toBe(1)
    // Fractional or negative token counts from an upstream never throw.
    expect(costMicros("m", { ...emptyUsage, inputTokens: 10.7, outputTokens: -3 }, 1, tenth)).toBe(1)
  })

  it("charges cached input at the cache prices, not twice", () => {
    const u = { ...emptyUsage, inputTokens: 1000, cacheReadTokens: 600, cacheCreationTokens: 100, outputTokens: 10 }
    // claude-sonnet: 300 x 3 + 600 x 0.3 + 100 x 3.75 + 10 x 15 = 900 + 180 + 375 + 150
    expect(costMicros("claude-sonnet-4-6", u, 1)).toBe(1605)
  })
})

describe("subscription windows (UTC)", () => {
  const at = Date.parse("2026-03-11T15:30:00Z") // a Wednesday

  it("are the UTC day, the ISO week from Monday and the calendar month", () => {
    expect(new Date(windowStart("daily", at)).toISOString()).toBe("2026-03-11T00:00:00.000Z")
    expect(new Date(windowEnd("daily", at)).toISOString()).toBe("2026-03-12T00:00:00.000Z")
    expect(new Date(windowStart("weekly", at)).toISOString()).toBe("2026-03-09T00:00:00.000Z")
    expect(new Date(windowEnd("weekly", at)).toISOString()).toBe("2026-03-16T00:00:00.000Z")
    expect(new Date(windowStart("monthly", at)).toISOString()).toBe("2026-03-01T00:00:00.000Z")
    expect(new Date(windowEnd("monthly", Date.parse("2026-12-31T23:59:59Z"))).toISOString()).toBe("2027-01-01T00:00:00.000Z")
    const sunday = Date.parse("2026-03-15T23:59:59Z")
    expect(new Date(windowStart("weekly", sunday)).toISOString()).toBe("2026-03-09T00:00:00.000Z")
  })

  it("count spend in the current window only; a late cost for an old window is not added", () => {
    let spends = addSpend(emptySpends, 100, at)
    spends = addSpend(spends, 50, at + 3_600_000)
    expect(usedIn("daily", spends, at)).toBe(150)
    expect(usedIn("daily", spends, at + 86_400_000)).toBe(0)
    expect(usedIn("weekly", spends, at + 86_400_000)).toBe(150)
    spends = addSpend(spends, 7, at - 86_400_000)
    expect(usedIn("daily", spends, at)).toBe(150)
  })
})

describe("the UTC day of a moment", () => {
  it("changes exactly at UTC midnight, also when moments alternate between days or precede 1970", () => {
    const day = (iso: string) => dayOf(new Date(iso))
    expect(day("2026-11-26T23:59:59.999Z")).toBe("2026-11-26")
    expect(day("2026-11-27T00:00:00.000Z")).toBe("2026-11-27")
    expect(day("2026-11-26T12:00:00.000Z")).toBe("2026-11-26")
    expect(day("2026-11-27T00:00:00.001Z")).toBe("2026-11-27")
    expect(day("1969-12-31T23:59:59.999Z")).toBe("1969-12-31")
    expect(day("1970-01-01T00:00:00.000Z")).toBe("1970-01-01")
    expect(day("2024-02-29T10:00:00+02:00")).toBe("2024-02-29")
    expect(day("2024-03-01T01:00:00+02:00")).toBe("2024-02-29")
    for (let i = 0; i < 200; i++) {
      const at = new Date(Date.UTC(2026, 0, 1) + i * 37_000_000)
      expect(dayOf(at)).toBe(at.toISOString().slice(0, 10))
    }
  })
})

describe("eligibility rules", () => {
  const principal = (billing: "balance" | "subscription", quota?: number): Principal =>
    testPrincipal({ billing, quotaMicros: quota })
  // The rules take the time from the caller (its Clock); these outcomes do not depend on it.
  const now = Date.UTC(2026, 0, 1)
  const outcome = (e: Effect.Effect<unknown, { readonly code: string }>) => {
    const exit = Effect.runSyncExit(e)
    if (Exit.isSuccess(exit)) return "ok"
    const error = Cause.findErrorOption(exit.cause)
    return error._tag === "Some" ? error.value.code : "defect"
  }

  it("key quota first, then balance or subscription", () => {
    expect(outcome(eligibility(principal("balance", 10), { quotaUsedMicros: 10, balanceMicros: 5 }, now))).toBe("key_quota_exhausted")
    expect(outcome(eligibility(principal("balance"), { quotaUsedMicros: 0, balanceMicros: 0 }, now))).toBe("insufficient_balance")
    expect(outcome(eligibility(principal("balance"), { quotaUsedMicros: 0, balanceMicros: 1 }, now))).toBe("ok")
    expect(outcome(eligibility(principal("balance"), { keyStatus: "quota_exhausted", quotaUsedMicros: 0, balanceMicros: 1 }, now)))
      .toBe("key_quota_exhausted")
    expect(outcome(eligibility(principal("subscription"), { quotaUsedMicros: 0, balanceMicros: 0 }, now))).toBe("subscription_required")
  })

  it("an eligible key may still spend the least of its balance, its quota left and its subscription windows left", () => {
    const left = (p: Principal, figures: Parameters<typeof eligibility>[1]) => Effect.runSync(eligibility(p, figures, now))
    expect(left(principal("balance"), { quotaUsedMicros: 0, balanceMicros: 700 })).toBe(700)
    expect(left(principal("balance", 1000), { quotaUsedMicros: 600, balanceMicros: 700 })).toBe(400)
    const subscription = {
      subscription: { userName: "u", groupName: "g", status: "active" as const, startsAt: undefined, expiresAt: undefined },
      limits: { daily: 500, weekly: undefined, monthly: 2000 },
      spends: addSpend(emptySpends, 300, now)
    }
    expect(left(principal("subscription"), { quotaUsedMicros: 0, balanceMicros: 0, subscription })).toBe(200)
    // Nothing bounds a subscription without limits or a key quota: no limit at all.
    const unlimited = { ...subscription, limits: { daily: undefined, weekly: undefined, monthly: undefined } }
    expect(left(principal("subscription"), { quotaUsedMicros: 0, balanceMicros: 0, subscription: unlimited })).toBeUndefined()
  })
})

describe("CLI money", () => {
  it("parses USD as a decimal string and prints micro-dollars digit for digit", () => {
    expect(parseUsd("12.345678", "x")).toEqual(Result.succeed(12_345_678))
    expect(parseUsd("0.1", "x")).toEqual(Result.succeed(100_000))
    expect(parseUsd("7", "x")).toEqual(Result.succeed(7_000_000))
    expect(Result.isFailure(parseUsd("1.2345678", "x"))).toBe(true)
    expect(Result.isFailure(parseUsd("-1", "x"))).toBe(true)
    expect(Result.isFailure(parseUsd("1e3", "x"))).toBe(true)
    expect(formatUsd(12_345_678)).toBe("12.345678")
    expect(formatUsd(1_500_000)).toBe("1.50")
    expect(formatUsd(-250_000)).toBe("-0.25")
    expect(formatUsd(204)).toBe("0.000204")
  })
})
