/**
 * One request must not take a group offline. Over real sockets, a gateway with the admin API and
 * two accounts per group on one scripted upstream that tells the accounts apart by their key:
 * - a 403 for what the request asked (a model this project may not use) reaches the client as a
 *   403 permission error in the upstream's words; no other account is asked, none is taken out, and
 *   another key's ordinary request is served (the openai and Anthropic SDKs are the oracles);
 * - one 401 fails over and only cools its account down; a second, on a later request, takes it out,
 *   and the admin API says why, since when, and what the upstream said (its key redacted).
 * In process, and on Redis when reachable.
 */
import Anthropic from "@anthropic-ai/sdk"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import OpenAI from "openai"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { AdminServer } from "../../src/admin/AdminServer.js"
import { LiveStore } from "../../src/admin/LiveStore.js"
import { AppConfig, defaultSettings, Settings } from "../../src/config/AppConfig.js"
import type { SchedulingSettings } from "../../src/config/scheduling.js"
import { adminOn, gatewayLayer } from "../../src/layers.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import * as SchedulerInProcess from "../../src/services/scheduler/inProcess.js"
import * as SchedulerRedis from "../../src/services/scheduler/redis.js"
import { sqlServices } from "../../src/store/Database.js"
import { type Backend, sqliteBackend } from "../store/harness.js"
import { testData } from "../support/gateway.js"
import { type ScriptedRequest, type ScriptedUpstream, startScriptedUpstream } from "../support/scriptedUpstream.js"
import { cleanupRedis, freshPrefix, REDIS_URL, redisReachable, requireServices } from "./redisHarness.js"

const ADMIN_TOKEN = "test-admin-token-auth-failures-01"
const KEY_A = "sk-auth-failures-key-a-0001"
const KEY_B = "sk-auth-failures-key-b-0002"
const AN_KEY_A = "sk-auth-failures-an-a-0003"
const AN_KEY_B = "sk-auth-failures-an-b-0004"
const SECRET_A = "sk-upstream-account-a-secret-000000001"
const SECRET_B = "sk-upstream-account-b-secret-000000002"
/** A model no project of the upstream may use: it answers 403, whichever account asks. */
const DENIED_MODEL = "gpt-5.4-pro"
const DENIED_CLAUDE = "claude-opus-4-1"

const config = (upstream: string) => ({
  groups: [{ name: "oa", platform: "openai" }, { name: "an", platform: "anthropic" }],
  users: [{ name: "dora", balance_usd: 100, concurrency: 20 }],
  keys: [
    { key: KEY_A, user: "dora", group: "oa", name: "key-a" },
    { key: KEY_B, user: "dora", group: "oa", name: "key-b" },
    { key: AN_KEY_A, user: "dora", group: "an", name: "an-key-a" },
    { key: AN_KEY_B, user: "dora", group: "an", name: "an-key-b" }
  ],
  accounts: [
    { name: "acct-a", platform: "openai", base_url: `${upstream}/v1`, api_key_env: "UP_A", groups: ["oa"], priority: 1 },
    { name: "acct-b", platform: "openai", base_url: `${upstream}/v1`, api_key_env: "UP_B", groups: ["oa"], priority: 2 },
    { name: "an-a", platform: "anthropic", base_url: upstream, api_key_env: "UP_A", groups: ["an"], priority: 1 },
    { name: "an-b", platform: "anthropic", base_url: upstream, api_key_env: "UP_B", groups: ["an"], priority: 2 }
  ]
})

const headerOf = (r: ScriptedRequest, name: string): string => {
  const v = r.headers[name]
  return typeof v === "string" ? v : ""
}

/** Which account sent an upstream request: its key, as either platform carries it. */
const accountOf = (r: ScriptedRequest): "a" | "b" | "?" => {
  const key = headerOf(r, "authorization").replace(/^Bearer\s+/i, "") || headerOf(r, "x-api-key")
  return key === SECRET_A ? "a" : key === SECRET_B ? "b" : "?"
}

const modelOf = (r: ScriptedRequest): unknown => (typeof r.body === "object" && r.body !== null ? (r.body as Record<string, unknown>)["model"] : undefined)

/**
 * What the upstream says: a 403 for the denied models (OpenAI's and Anthropic's wording, the model
 * echoed); a refusal of account A's key while `refuseA` is above zero (one per request); else text.
 */
const upstreamScript = (state: { refuseA: number; refusal: "401" | "403-deactivated" }) => (r: ScriptedRequest) => {
  const model = modelOf(r)
  if (model === DENIED_MODEL) {
    return {
      _tag: "Status" as const,
      status: 403,
      body: {
        error: {
          message: `Project \`proj_auth_failures\` does not have access to model \`${DENIED_MODEL}\``,
          type: "invalid_request_error",
          param: null,
          code: "model_not_found"
        }
      }
    }
  }
  if (model === DENIED_CLAUDE) {
    return {
      _tag: "Status" as const,
      status: 403,
      body: { type: "error", error: { type: "permission_error", message: `Your organization does not have access to ${DENIED_CLAUDE}` } }
    }
  }
  if (accountOf(r) === "a" && state.refuseA > 0) {
    state.refuseA--
    return state.refusal === "401"
      ? {
        _tag: "Status" as const,
        status: 401,
        // The upstream echoes the key it refused: the operator must not read it back.
        body: { error: { message: `Incorrect API key provided: ${SECRET_A}.`, type: "invalid_request_error", param: null, code: "invalid_api_key" } }
      }
      : {
        _tag: "Status" as const,
        status: 403,
        body: { error: { message: "Your account has been deactivated.", type: "invalid_request_error", param: null, code: "account_deactivated" } }
      }
  }
  return { _tag: "Text" as const, text: "served" }
}

interface Gateway {
  readonly url: string
  readonly admin: string
  readonly close: () => Promise<void>
}

const startGateway = async (
  upstream: string,
  db: Backend,
  scheduling: Partial<SchedulingSettings>,
  redisPrefix: string | undefined
): Promise<Gateway> => {
  const sql = sqlServices((await db.fresh()).target, { reportOrphans: false })
  const scheduler = redisPrefix === undefined
    ? SchedulerInProcess.layer
    : SchedulerRedis.layer({ url: REDIS_URL, prefix: redisPrefix })
  const layer = AdminServer.layer({ port: 0, host: "127.0.0.1", token: Redacted.make(ADMIN_TOKEN) }).pipe(
    Layer.provide(adminOn(sql.store, LiveStore.layer)),
    Layer.provideMerge(gatewayLayer({ keyRepo: sql.keyRepo, quota: sql.quota, scheduler })),
    Layer.provide(AppConfig.layer(testData(config(upstream), { UP_A: SECRET_A, UP_B: SECRET_B }), "test")),
    Layer.provide(Settings.layer({ scheduling: { ...defaultSettings.scheduling, ...scheduling } }))
  )
  const runtime = ManagedRuntime.make(layer)
  const url = (await runtime.runPromise(Effect.service(GatewayServer))).url
  const admin = (await runtime.runPromise(Effect.service(AdminServer))).url
  return { url, admin, close: () => runtime.dispose() }
}

interface AccountRow {
  readonly name: string
  readonly health: string
  readonly health_reason: string | null
  readonly taken_out_since: string | null
  readonly taken_out_upstream_message: string | null
}

const accounts = async (g: Gateway): Promise<Record<string, AccountRow>> => {
  const res = await fetch(`${g.admin}/admin/accounts`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.status).toBe(200)
  const rows = (await res.json()) as ReadonlyArray<AccountRow>
  return Object.fromEntries(rows.map((r) => [r.name, r]))
}

const openai = (g: Gateway, key: string) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: key, maxRetries: 0 })
const anthropic = (g: Gateway, key: string) => new Anthropic({ baseURL: g.url, apiKey: key, maxRetries: 0 })

let asked = 0
const ask = (g: Gateway, key: string, model = "gpt-5.4") => openai(g, key).responses.create({ model, input: `auth failures ${++asked}` })

const suite = (name: string, redisPrefix: () => string | undefined) => {
  describe(name, () => {
    let upstream: ScriptedUpstream
    let db: Backend
    let gw: Gateway | undefined
    const state = { refuseA: 0, refusal: "401" as "401" | "403-deactivated" }

    const start = async (scheduling: Partial<SchedulingSettings> = {}) => {
      gw = await startGateway(upstream.url, db, scheduling, redisPrefix())
      return gw
    }
    /** Which accounts the upstream heard from since `from` (an index into its request log). */
    const askedSince = (from: number) => upstream.requests.slice(from).map(accountOf).join("")

    beforeAll(async () => {
      upstream = await startScriptedUpstream(upstreamScript(state))
      db = sqliteBackend()
    })
    afterEach(async () => {
      state.refuseA = 0
      state.refusal = "401"
      await gw?.close()
      gw = undefined
    })
    afterAll(async () => {
      await upstream.close()
      await db.cleanup()
    })

    it("a 403 for a model the project may not use is the client's: its words, one account asked, nobody taken out, key B served", async () => {
      const g = await start()
      for (let i = 0; i < 3; i++) {
        const from = upstream.requests.length
        const error = await ask(g, KEY_A, DENIED_MODEL).then(() => undefined, (e: unknown) => e)
        expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
        const denied = error as InstanceType<typeof OpenAI.PermissionDeniedError>
        expect(denied.status).toBe(403)
        expect(denied.message).toContain(`does not have access to model \`${DENIED_MODEL}\``)
        expect(denied.code).toBe("model_not_found")
        expect(askedSince(from)).toBe("a")
      }
      const from = upstream.requests.length
      const served = await ask(g, KEY_B)
      expect(served.output_text).toBe("served")
      expect(askedSince(from)).toBe("a")
      const rows = await accounts(g)
      expect([rows["acct-a"]?.health, rows["acct-b"]?.health]).toEqual(["ok", "ok"])
    })

    it("the same through the Messages door: Anthropic's permission_error reaches Claude's SDK as a 403; the other key is served", async () => {
      const g = await start()
      const from = upstream.requests.length
      const error = await anthropic(g, AN_KEY_A).messages.create({
        model: DENIED_CLAUDE,
        max_tokens: 64,
        messages: [{ role: "user", content: "hello" }]
      }).then(() => undefined, (e: unknown) => e)
      expect(error).toBeInstanceOf(Anthropic.PermissionDeniedError)
      expect((error as InstanceType<typeof Anthropic.PermissionDeniedError>).message).toContain(`does not have access to ${DENIED_CLAUDE}`)
      expect(askedSince(from)).toBe("a")
      const served = await anthropic(g, AN_KEY_B).messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        messages: [{ role: "user", content: "hello" }]
      })
      expect(served.content).toEqual([{ type: "text", text: "served" }])
      expect((await accounts(g))["an-a"]?.health).toBe("ok")
    })

    it("one 401: the request is served by the other account, and the refused one only cools down (the admin API says why)", async () => {
      const g = await start()
      state.refuseA = 1
      const from = upstream.requests.length
      expect((await ask(g, KEY_A)).output_text).toBe("served")
      expect(askedSince(from)).toBe("ab")
      expect((await ask(g, KEY_B)).output_text).toBe("served")
      const a = (await accounts(g))["acct-a"]
      expect(a).toMatchObject({ health: "cooling_down", health_reason: "auth_failed", taken_out_since: null })
    })

    it("one 401 and the cooldown over: the account serves again, not taken out", async () => {
      const g = await start({ authCooldownSeconds: 0 })
      state.refuseA = 1
      const from = upstream.requests.length
      await ask(g, KEY_A)
      await ask(g, KEY_B)
      // A refused once, then served key B.
      expect(askedSince(from)).toBe("aba")
      expect((await accounts(g))["acct-a"]?.health).toBe("ok")
    })

    it("401s on two requests take the account out; the admin API shows the reason, since when and the upstream's words, its key redacted", async () => {
      const g = await start({ authCooldownSeconds: 0 })
      state.refuseA = 2
      const from = upstream.requests.length
      for (const key of [KEY_A, KEY_B, KEY_A]) expect((await ask(g, key)).output_text).toBe("served")
      expect(askedSince(from)).toBe("ababb")
      const a = (await accounts(g))["acct-a"]
      expect(a).toMatchObject({ health: "taken_out", health_reason: "auth_failed" })
      expect(Date.parse(a?.taken_out_since ?? "")).not.toBeNaN()
      expect(a?.taken_out_upstream_message).toMatch(/^Incorrect API key provided: /)
      expect(a?.taken_out_upstream_message).not.toContain(SECRET_A)
      // The operator brings it back.
      const back = await fetch(`${g.admin}/admin/accounts/acct-a/reinstate`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` }
      })
      expect(back.status).toBe(200)
      expect(await back.json()).toMatchObject({ health: "ok", health_reason: null, taken_out_upstream_message: null })
    })

    it("a 403 that says the account is deactivated fails over and counts like a 401", async () => {
      const g = await start({ authCooldownSeconds: 0 })
      state.refusal = "403-deactivated"
      state.refuseA = 2
      const from = upstream.requests.length
      for (const key of [KEY_A, KEY_B]) expect((await ask(g, key)).output_text).toBe("served")
      expect(askedSince(from)).toBe("abab")
      expect((await accounts(g))["acct-a"]).toMatchObject({
        health: "taken_out",
        health_reason: "auth_failed",
        taken_out_upstream_message: "Your account has been deactivated."
      })
    })
  })
}

suite("auth failures, in-process scheduler", () => undefined)

const reachable = await redisReachable()
if (reachable) {
  afterAll(() => cleanupRedis())
  suite("auth failures, Redis scheduler", freshPrefix)
} else if (requireServices) {
  describe("auth failures, Redis scheduler", () => {
    it(`Redis is reachable at ${REDIS_URL} (MODELGATE_REQUIRE_SERVICES=1)`, () => {
      expect.fail(`Redis is not reachable at ${REDIS_URL}`)
    })
  })
} else {
  console.warn(`Redis is not reachable at ${REDIS_URL}: skipping the Redis auth-failure tests (set REDIS_TEST_URL)`)
}
