/**
 * Authentication (DESIGN.md "Auth" and pipeline step 1): header order, missing / unknown /
 * disabled / expired keys, keys in the query string.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope, postResponses } from "./helpers.js"

const ACTIVE = "sk-auth-active-0001"
const OTHER = "sk-auth-other-0002"
const DISABLED = "sk-auth-disabled-0003"
const EXPIRED = "sk-auth-expired-0004"
const EXPIRED_STATUS = "sk-auth-expired-status-0005"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }, {
    name: "an",
    platform: "anthropic",
    models: ["claude-sonnet-4-5"]
  }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [
    { key: ACTIVE, user: "alice", group: "oa" },
    // A second valid key on another group: which key won shows in the model list.
    { key: OTHER, user: "alice", group: "an" },
    { key: DISABLED, user: "alice", group: "oa", status: "disabled" },
    { key: EXPIRED, user: "alice", group: "oa", expires_at: "2020-01-01T00:00:00Z" },
    { key: EXPIRED_STATUS, user: "alice", group: "oa", status: "expired" }
  ],
  accounts: [
    { name: "sim-oa", platform: "openai", kind: "simulator", groups: ["oa"] },
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an"] }
  ]
}

const modelIds = (json: unknown) => (json as { data: Array<{ id: string }> }).data.map((m) => m.id)

describe("auth", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  it("accepts Authorization: Bearer, x-api-key and x-goog-api-key", async () => {
    for (const headers of [{ authorization: `Bearer ${ACTIVE}` }, { "x-api-key": ACTIVE }, { "x-goog-api-key": ACTIVE }]) {
      const res = await call(gw.url, "/v1/models", { headers })
      expect(res.status).toBe(200)
      expect(modelIds(res.json)).toEqual(["gpt-5.4"])
    }
    const viaGoog = await call(gw.url, "/v1/responses", {
      headers: { "x-goog-api-key": ACTIVE },
      body: { model: "gpt-5.4", input: "hi" }
    })
    expect(viaGoog.status).toBe(200)
  })

  it("uses Bearer before x-api-key before x-goog-api-key", async () => {
    const bearerWins = await call(gw.url, "/v1/models", {
      headers: { authorization: `Bearer ${ACTIVE}`, "x-api-key": OTHER, "x-goog-api-key": OTHER }
    })
    expect(modelIds(bearerWins.json)).toEqual(["gpt-5.4"])
    const apiKeyWins = await call(gw.url, "/v1/models", { headers: { "x-api-key": OTHER, "x-goog-api-key": ACTIVE } })
    expect(modelIds(apiKeyWins.json)).toEqual(["claude-sonnet-4-5"])
    // The first key present decides: a bad Bearer is not rescued by a good x-api-key.
    const badBearer = await call(gw.url, "/v1/models", { headers: { authorization: "Bearer sk-nope", "x-api-key": ACTIVE } })
    expectEnvelope(badBearer, { status: 401, type: "authentication_error", code: "invalid_api_key" })
    const badApiKey = await call(gw.url, "/v1/models", { headers: { "x-api-key": "sk-nope", "x-goog-api-key": ACTIVE } })
    expectEnvelope(badApiKey, { status: 401, type: "authentication_error", code: "invalid_api_key" })
  })

  it("a non-Bearer Authorization falls through to x-api-key", async () => {
    const res = await call(gw.url, "/v1/models", { headers: { authorization: "Basic Zm9vOmJhcg==", "x-api-key": ACTIVE } })
    expect(res.status).toBe(200)
  })

  it("no key: 401 missing_api_key on every keyed route", async () => {
    for (const [path, body] of [["/v1/models", undefined], ["/v1/usage", undefined], ["/antigravity/models", undefined], [
      "/v1/responses",
      { model: "gpt-5.4", input: "hi" }
    ]] as const) {
      const res = await call(gw.url, path, body === undefined ? {} : { body })
      expectEnvelope(res, { status: 401, type: "authentication_error", code: "missing_api_key", param: null })
      expect(res.headers.get("x-should-retry")).toBe("false")
    }
    const emptyBearer = await call(gw.url, "/v1/models", { headers: { authorization: "Bearer " } })
    expectEnvelope(emptyBearer, { status: 401, type: "authentication_error", code: "missing_api_key" })
  })

  it("unknown key: 401 invalid_api_key", async () => {
    const res = await postResponses(gw.url, "sk-does-not-exist", { model: "gpt-5.4", input: "hi" })
    expectEnvelope(res, { status: 401, type: "authentication_error", code: "invalid_api_key", message: "Invalid API key" })
  })

  it("disabled key: 401 api_key_disabled, on /v1/usage too", async () => {
    for (const path of ["/v1/models", "/v1/usage"]) {
      const res = await call(gw.url, path, { key: DISABLED })
      expectEnvelope(res, { status: 401, type: "authentication_error", code: "api_key_disabled" })
    }
    const res = await postResponses(gw.url, DISABLED, { model: "gpt-5.4", input: "hi" })
    expectEnvelope(res, { status: 401, type: "authentication_error", code: "api_key_disabled" })
  })

  it("expired key (expires_at in the past or status expired): 403 api_key_expired on responses", async () => {
    for (const key of [EXPIRED, EXPIRED_STATUS]) {
      const res = await postResponses(gw.url, key, { model: "gpt-5.4", input: "hi" })
      expectEnvelope(res, { status: 403, type: "permission_error", code: "api_key_expired" })
    }
  })

  it("an expired key still reads /v1/usage, which reports it expired", async () => {
    for (const key of [EXPIRED, EXPIRED_STATUS]) {
      const res = await call(gw.url, "/v1/usage", { key })
      expect(res.status).toBe(200)
      expect(res.json).toMatchObject({ status: "expired", isValid: false })
    }
    const withDate = await call(gw.url, "/v1/usage", { key: EXPIRED })
    expect(withDate.json).toMatchObject({ expires_at: "2020-01-01T00:00:00.000Z" })
  })

  it("a key in the query string is refused with 400 api_key_in_query, even beside a valid header", async () => {
    for (const path of ["/v1/models?key=abc", "/v1/usage?api_key=abc", `/v1/models?key=${ACTIVE}`]) {
      const res = await call(gw.url, path, { key: ACTIVE })
      expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "api_key_in_query" })
    }
    const responses = await call(gw.url, "/v1/responses?api_key=abc", { key: ACTIVE, body: { model: "gpt-5.4", input: "hi" } })
    expectEnvelope(responses, { status: 400, type: "invalid_request_error", code: "api_key_in_query" })
  })

  it("empty key= query parameters are not keys", async () => {
    const res = await call(gw.url, "/v1/models?key=&api_key=", { key: ACTIVE })
    expect(res.status).toBe(200)
  })

  it("auth comes before body checks", async () => {
    const res = await call(gw.url, "/v1/responses", { body: "{not json" })
    expectEnvelope(res, { status: 401, type: "authentication_error", code: "missing_api_key" })
    const expired = await postResponses(gw.url, EXPIRED, "{not json")
    expectEnvelope(expired, { status: 403, type: "permission_error", code: "api_key_expired" })
  })
})
