/**
 * src/services/scheduler/verdict.ts (with src/domain/rateLimitReset.ts and credential.ts): what an
 * upstream failure does to the account, and when a rate limit lifts. A short burst must never be taken for an exhausted window.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseResetValue, rateLimitResetMillis } from "../../src/domain/rateLimitReset.js"
import { defaultSchedulingSettings } from "../../src/config/scheduling.js"
import { defaultFailover } from "../../src/services/scheduler/Scheduler.js"
import { credentialRefused } from "../../src/domain/credential.js"
import { failoverReason, verdictFor } from "../../src/services/scheduler/verdict.js"

const NOW = Date.parse("2026-06-01T12:00:00Z")
const policy = defaultSchedulingSettings

const verdict = (status: number, headers: Record<string, string> = {}, code?: string) =>
  verdictFor({ status, headers, code }, policy, NOW)

describe("parseResetValue", () => {
  it.each([
    ["1s", 1_000],
    ["6m0s", 360_000],
    ["20ms", 20],
    ["1h2m3s", 3_723_000],
    ["0.5s", 500],
    ["7", 7_000],
    ["2.5", 2_500],
    [String(NOW / 1000 + 90), 90_000],
    [String(NOW + 1_500), 1_500],
    ["2026-06-01T12:00:30Z", 30_000],
    ["Mon, 01 Jun 2026 12:01:00 GMT", 60_000]
  ])("%s -> %d ms", (raw, ms) => {
    expect(parseResetValue(raw, NOW)).toBe(ms)
  })

  it("a time in the past is now; nonsense is unknown", () => {
    expect(parseResetValue("2026-06-01T11:00:00Z", NOW)).toBe(0)
    expect(parseResetValue("soon", NOW)).toBeUndefined()
    expect(parseResetValue("", NOW)).toBeUndefined()
  })
})

describe("rateLimitResetMillis", () => {
  it("retry-after-ms, then retry-after, win over window headers", () => {
    expect(rateLimitResetMillis({ "retry-after-ms": "1500", "retry-after": "9" }, NOW)).toBe(1_500)
    expect(rateLimitResetMillis({ "retry-after": "2", "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "0" }, NOW))
      .toBe(2_000)
  })

  it("OpenAI: only an exhausted window holds the account back", () => {
    // Requests ran out (reset 1 s); tokens still have room (their bucket refills fully in 6 min).
    expect(rateLimitResetMillis({
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-remaining-tokens": "15000",
      "x-ratelimit-reset-tokens": "6m0s"
    }, NOW)).toBe(1_000)
    // Tokens ran out: that window decides.
    expect(rateLimitResetMillis({
      "x-ratelimit-remaining-requests": "99",
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "6m0s"
    }, NOW)).toBe(360_000)
  })

  it("no window marked exhausted: the soonest reset", () => {
    expect(rateLimitResetMillis({ "x-ratelimit-reset-requests": "3s", "x-ratelimit-reset-tokens": "6m0s" }, NOW)).toBe(3_000)
  })

  it("Anthropic: per-window resets as dates; unified windows by status", () => {
    expect(rateLimitResetMillis({
      "anthropic-ratelimit-requests-remaining": "0",
      "anthropic-ratelimit-requests-reset": "2026-06-01T12:00:20Z",
      "anthropic-ratelimit-tokens-remaining": "100",
      "anthropic-ratelimit-tokens-reset": "2026-06-01T12:00:05Z"
    }, NOW)).toBe(20_000)
    const fiveHours = String(NOW / 1000 + 4 * 3600)
    expect(rateLimitResetMillis({
      "anthropic-ratelimit-unified-status": "rejected",
      "anthropic-ratelimit-unified-reset": fiveHours,
      "anthropic-ratelimit-unified-5h-status": "rejected",
      "anthropic-ratelimit-unified-5h-reset": fiveHours,
      "anthropic-ratelimit-unified-7d-status": "allowed",
      "anthropic-ratelimit-unified-7d-reset": String(NOW / 1000 + 5 * 86400)
    }, NOW)).toBe(4 * 3_600_000)
  })

  it("nothing to go on: undefined", () => {
    expect(rateLimitResetMillis({ "content-type": "application/json" }, NOW)).toBeUndefined()
  })
})

describe("verdictFor", () => {
  it("429: a short reset is a burst, a long one an exhausted window; no reset, the short default", () => {
    expect(verdict(429, { "retry-after": "7" })).toEqual({ _tag: "CoolDown", millis: 7_000, reason: "rate_limit_burst" })
    expect(verdict(429, {
      "anthropic-ratelimit-unified-status": "rejected",
      "anthropic-ratelimit-unified-reset": String(NOW / 1000 + 3 * 3600)
    })).toEqual({ _tag: "CoolDown", millis: 3 * 3_600_000, reason: "rate_limit_window" })
    expect(verdict(429)).toEqual({ _tag: "CoolDown", millis: policy.rateLimitDefaultSeconds * 1000, reason: "rate_limit_burst" })
  })

  it("429: at least a second, at most the configured maximum", () => {
    expect(verdict(429, { "retry-after": "0" })).toMatchObject({ millis: 1_000 })
    expect(verdict(429, { "retry-after": String(30 * 86400) })).toMatchObject({
      millis: policy.rateLimitMaxSeconds * 1000,
      reason: "rate_limit_window"
    })
  })

  it("529 cools down briefly; 402 takes the account out", () => {
    expect(verdict(529)).toEqual({ _tag: "CoolDown", millis: policy.overloadSeconds * 1000, reason: "overloaded" })
    expect(verdict(402)).toEqual({ _tag: "TakeOut", reason: "billing" })
  })

  it("401, and a 403 that refused the credential, are strikes: a short cooldown, confirmed within the window", () => {
    const strike = {
      _tag: "Strike",
      millis: policy.authCooldownSeconds * 1000,
      windowMillis: policy.authConfirmWindowSeconds * 1000,
      reason: "auth_failed"
    }
    expect(verdict(401)).toEqual(strike)
    expect(verdict(401, {}, "upstream_auth_failed")).toEqual(strike)
    expect(verdict(403, {}, "upstream_auth_failed")).toEqual(strike)
  })

  it("a refusal that follows another account's on the same request is held against nobody", () => {
    for (const [status, code] of [[401, undefined], [403, "upstream_auth_failed"]] as const) {
      expect(verdictFor({ status, headers: {}, code, credentialRefusedBefore: true }, policy, NOW)).toEqual({ _tag: "Ignore" })
    }
    // Any other failure after a refusal is judged as ever.
    expect(verdictFor({ status: 529, headers: {}, code: undefined, credentialRefusedBefore: true }, policy, NOW))
      .toMatchObject({ _tag: "CoolDown", reason: "overloaded" })
  })

  it("a 403 for what the request asked is the request's: nothing against the account", () => {
    for (const code of [undefined, "model_not_found", "upstream_permission_denied", "unsupported_country_region_territory"]) {
      expect(verdict(403, {}, code)).toEqual({ _tag: "Ignore" })
    }
  })

  it("5xx, 408 and transport failures are counted", () => {
    expect(verdict(500)).toEqual({ _tag: "Count", reason: "server_error" })
    expect(verdict(503)).toEqual({ _tag: "Count", reason: "server_error" })
    expect(verdict(408)).toEqual({ _tag: "Count", reason: "timeout" })
    expect(verdict(0, {}, "upstream_first_byte_timeout")).toEqual({ _tag: "Count", reason: "timeout" })
    expect(verdict(0, {}, "upstream_unreachable")).toEqual({ _tag: "Count", reason: "unreachable" })
  })

  it("the request's own 4xx is ignored", () => {
    for (const status of [400, 404, 413, 422]) expect(verdict(status)).toEqual({ _tag: "Ignore" })
  })
})

describe("failoverReason", () => {
  it("names what happened", () => {
    expect(failoverReason(429, undefined)).toBe("rate_limited")
    expect(failoverReason(529, undefined)).toBe("overloaded")
    expect(failoverReason(401, undefined)).toBe("auth_failed")
    expect(failoverReason(502, undefined)).toBe("server_error")
    expect(failoverReason(0, "upstream_first_byte_timeout")).toBe("first_byte_timeout")
    expect(failoverReason(0, "upstream_connect_timeout")).toBe("connect_timeout")
    expect(failoverReason(0, "upstream_unreachable")).toBe("connect_error")
  })
})

describe("defaultFailover", () => {
  it("a credential refused by a second account stops the request; the first moves on", () => {
    expect(defaultFailover({ status: 401, code: "upstream_auth_failed" }, 1, 2)).toEqual({ _tag: "Switch", reason: "auth_failed" })
    for (const failure of [{ status: 401, code: "upstream_auth_failed" }, { status: 403, code: "upstream_auth_failed" }]) {
      expect(defaultFailover({ ...failure, credentialRefusedBefore: true }, 2, 2)).toEqual({ _tag: "Stop", reason: undefined })
    }
    // Other failures after a refusal still move on.
    expect(defaultFailover({ status: 529, code: "upstream_overloaded", credentialRefusedBefore: true }, 2, 2))
      .toEqual({ _tag: "Switch", reason: "overloaded" })
  })
})

describe("credentialRefused: when a 403 says the credential itself is bad", () => {
  it("OpenAI and Anthropic refusals of the key, the account or the organization", () => {
    expect(credentialRefused({ code: "invalid_api_key", type: "invalid_request_error", message: "Incorrect API key provided: sk-***" })).toBe(true)
    expect(credentialRefused({ code: "account_deactivated", message: "Your account has been deactivated" })).toBe(true)
    expect(credentialRefused({ type: "authentication_error", message: "invalid x-api-key" })).toBe(true)
    expect(credentialRefused({ type: "permission_error", message: "This organization has been disabled." })).toBe(true)
    expect(credentialRefused({ message: "Incorrect API key provided: sk-proj-***" })).toBe(true)
  })

  it("what a request chose (a model, a feature, a region) is not the credential's fault", () => {
    expect(credentialRefused({
      code: "model_not_found",
      type: "invalid_request_error",
      message: "Project `proj_abc` does not have access to model `gpt-5.4-pro`"
    })).toBe(false)
    expect(credentialRefused({ type: "permission_error", message: "Your API key does not have permission to use the specified resource." }))
      .toBe(false)
    expect(credentialRefused({ code: "unsupported_country_region_territory", message: "Country, region, or territory not supported" }))
      .toBe(false)
    expect(credentialRefused({})).toBe(false)
  })

  it("a model name a client words like a credential refusal never makes one (the upstream echoes it)", () => {
    const wording = fc.constantFrom(
      "invalid api key",
      "Incorrect API key provided",
      "your account has been deactivated",
      "this organization has been disabled",
      "invalid x-api-key"
    )
    const model = fc.tuple(fc.string(), wording, fc.string()).map(([a, w, b]) => `${a}${w}${b}`)
    fc.assert(fc.property(model, (m) => {
      expect(credentialRefused({
        code: "model_not_found",
        type: "invalid_request_error",
        message: `Project \`proj_abc\` does not have access to model \`${m}\``
      })).toBe(false)
      expect(credentialRefused({ type: "permission_error", message: `model: ${m} is not available to your organization` })).toBe(false)
      expect(credentialRefused({ type: "not_found_error", message: `The model '${m}' does not exist` })).toBe(false)
    }))
  })
})
