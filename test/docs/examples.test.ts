/**
 * The config files in examples/ load as written, through the loader `npm start -- --config` uses
 * (YAML, schema, cross-references, secrets named by environment variable), and do what their
 * comments say: the minimal one serves both platforms on both doors, moderation blocks and
 * observes, a subscription admits its subscriber, the several-instances environment names a
 * PostgreSQL database and a Redis. Served against the fake upstream: the files' base_url is the
 * one thing swapped, as a test cannot call the real providers.
 */
import { readdirSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import Anthropic from "@anthropic-ai/sdk"
import { Effect, Result } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parse as parseYaml } from "yaml"
import { loadConfigFile } from "../../src/config/load.js"
import type { GatewayData } from "../../src/config/resolve.js"
import { parseDatabaseUrl } from "../../src/store/target.js"
import { startChatUpstream } from "../support/chatUpstream.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const EXAMPLES = resolve(import.meta.dirname, "../../examples")
const yamlFiles = readdirSync(EXAMPLES).filter((f) => f.endsWith(".yaml")).sort()

/** `NAME=value` lines, as `set -a; . file` reads them (comments and blank lines skipped). */
const envFile = (name: string): Record<string, string> =>
  Object.fromEntries(
    readFileSync(resolve(EXAMPLES, name), "utf8").split("\n")
      .filter((line) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
  )

/** The secrets an example's comments export (any value will do for loading). */
const secrets = { OPENAI_API_KEY: "sk-test", ANTHROPIC_API_KEY: "sk-ant-test", ...envFile("several-instances.env") }

const load = (file: string): Promise<GatewayData> => Effect.runPromise(loadConfigFile(resolve(EXAMPLES, file), secrets))

/** The example's config with every account pointed at the fake upstream, loaded as `npm start` would. */
const served = (file: string, upstream: FakeUpstream): Promise<TestGateway> => {
  const raw = parseYaml(readFileSync(resolve(EXAMPLES, file), "utf8")) as { accounts: Array<Record<string, unknown>> }
  for (const account of raw.accounts) {
    account["base_url"] = account["platform"] === "openai" ? `${upstream.url}/v1` : upstream.url
  }
  return startGateway({ config: raw, env: secrets })
}

const responses = (gw: TestGateway, key: string, body: Record<string, unknown>) =>
  fetch(`${gw.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

describe("examples/", () => {
  it("has the five configurations the README points to, and each loads as written", async () => {
    expect(yamlFiles).toEqual(["local-chat.yaml", "minimal.yaml", "moderation.yaml", "several-instances.yaml", "subscription.yaml"])
    for (const file of yamlFiles) {
      const data = await load(file)
      expect(data.keys.length, file).toBeGreaterThan(0)
      expect(data.accounts.length, file).toBeGreaterThan(0)
    }
  })

  it("README points to each of them", () => {
    const readme = readFileSync(resolve(EXAMPLES, "../README.md"), "utf8")
    for (const file of [...yamlFiles, "several-instances.env"]) expect(readme, file).toContain(`\`${file}\``)
    expect(readme).toContain("npm start -- --config examples/minimal.yaml")
  })

  it("a missing secret stops the start, naming the variable", async () => {
    const failed = await Effect.runPromise(Effect.result(loadConfigFile(resolve(EXAMPLES, "minimal.yaml"), {})))
    expect(Result.isFailure(failed)).toBe(true)
    if (Result.isFailure(failed)) expect(failed.failure.message).toContain("OPENAI_API_KEY is not set")
  })

  it("several-instances: PostgreSQL and Redis from its environment file, accounts that fail over", async () => {
    const env = envFile("several-instances.env")
    const target = parseDatabaseUrl(env["DATABASE_URL"])
    expect(Result.isSuccess(target) && target.success._tag).toBe("Postgres")
    expect(env["REDIS_URL"]).toMatch(/^redis:\/\/\S+$/)
    const data = await load("several-instances.yaml")
    const openai = data.accounts.filter((a) => a.groups.includes("team-openai"))
    expect(openai.map((a) => a.name)).toEqual(["openai-main", "openai-backup"])
    for (const account of data.accounts) expect(Object.keys(env), account.name).toContain(data.accountSecretEnv.get(account.name))
  })

  it("subscription: a subscription group with all three windows and a subscriber", async () => {
    const data = await load("subscription.yaml")
    expect(data.groups.get("pro")?.billing).toBe("subscription")
    expect(data.windowLimits.get("pro")).toBeDefined()
    expect(data.subscriptions.map((s) => [s.userName, s.groupName])).toEqual([["carol", "pro"]])
  })

  describe("served against the fake upstream", () => {
    let upstream: FakeUpstream
    const gateways: Array<TestGateway> = []
    beforeAll(async () => {
      upstream = await startFakeUpstream()
    })
    afterAll(async () => {
      for (const gw of gateways) await gw.close()
      await upstream.close()
    })
    const start = async (file: string) => {
      const gw = await served(file, upstream)
      gateways.push(gw)
      return gw
    }

    it("minimal: each key gets its group's models, on both doors", async () => {
      const gw = await start("minimal.yaml")
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "sk-alice-openai-change-me", maxRetries: 0 })
      expect((await openai.models.list()).data.map((m) => m.id)).toEqual(["gpt-5.4", "gpt-5.4-mini"])
      const answer = await openai.responses.create({ model: "gpt-5.4", input: "Hello!" })
      expect(answer.output_text).not.toBe("")

      const claude = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "sk-alice-claude-change-me", maxRetries: 0 })
      const translated = await claude.responses.create({ model: "claude-sonnet-4-6", input: "Hello!" })
      expect(translated.output_text).not.toBe("")

      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: "sk-alice-claude-change-me", maxRetries: 0 })
      const message = await anthropic.messages.create({
        model: "claude-sonnet-4-6",
        max_tokens: 64,
        messages: [{ role: "user", content: "Hello!" }]
      })
      expect(message.content.length).toBeGreaterThan(0)

      // A model the group does not list is refused, as docs/errors.md says.
      const refused = await responses(gw, "sk-alice-openai-change-me", { model: "claude-sonnet-4-6", input: "Hi" })
      expect(refused.status).toBe(404)
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("model_not_found")
    })

    it("moderation: the block group is refused before any upstream call, the observe group is served", async () => {
      const gw = await start("moderation.yaml")
      const before = upstream.requests.length
      const blocked = await responses(gw, "sk-students-change-me", { model: "gpt-5.4", input: "how do I build a bomb" })
      expect(blocked.status).toBe(403)
      expect(((await blocked.json()) as { error: { code: string } }).error.code).toBe("content_policy_violation")
      expect(upstream.requests.length).toBe(before)

      const observed = await responses(gw, "sk-staff-change-me", { model: "claude-sonnet-4-6", input: "how do I build a bomb" })
      expect(observed.status).toBe(200)
      const fine = await responses(gw, "sk-students-change-me", { model: "gpt-5.4", input: "how do I build a bridge" })
      expect(fine.status).toBe(200)
    })

    it("local-chat: the Chat server behind the Responses, Messages and Chat doors", async () => {
      const chat = await startChatUpstream()
      try {
        const raw = parseYaml(readFileSync(resolve(EXAMPLES, "local-chat.yaml"), "utf8")) as { accounts: Array<Record<string, unknown>> }
        for (const account of raw.accounts) account["base_url"] = `${chat.url}/v1`
        const gw = await startGateway({ config: raw, env: secrets })
        gateways.push(gw)
        const key = "sk-local-please-change-me"
        const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 })
        expect((await openai.models.list()).data.map((m) => m.id)).toEqual(["qwen3-coder"])
        expect((await openai.responses.create({ model: "qwen3-coder", input: "Hello!" })).output_text).not.toBe("")
        expect((await openai.chat.completions.create({ model: "qwen3-coder", messages: [{ role: "user", content: "Hello!" }] })).choices[0]?.message.content).not.toBe("")
        const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 })
        const message = await anthropic.messages.create({ model: "qwen3-coder", max_tokens: 64, messages: [{ role: "user", content: "Hello!" }] })
        expect(message.content.length).toBeGreaterThan(0)
        expect(chat.requests.every((r) => r.body["model"] === "qwen3-coder:30b" && r.headers["x-title"] === "modelgate")).toBe(true)
      } finally {
        await chat.close()
      }
    })

    it("subscription: the subscriber and the balance user are both served", async () => {
      const gw = await start("subscription.yaml")
      expect((await responses(gw, "sk-carol-pro-change-me", { model: "gpt-5.4", input: "Hi" })).status).toBe(200)
      expect((await responses(gw, "sk-dave-payg-change-me", { model: "gpt-5.4", input: "Hi" })).status).toBe(200)
    })
  })
})
