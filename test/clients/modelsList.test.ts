/**
 * GET /v1/models and GET /v1/models/{id} read by both real clients: the openai SDK (Bearer key, `{object, data}`) and the
 * Anthropic SDK (x-api-key, anthropic-version, a `Page` that follows `after_id` until `has_more` is
 * false). Each must iterate the group's ids exactly once.
 */
import Anthropic, { AuthenticationError, NotFoundError as AnthropicNotFound } from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI, { NotFoundError as OpenAINotFound } from "openai"
import { startGateway, type TestGateway } from "../support/gateway.js"

const OPENAI_KEY = "sk-clients-models-oa-0001"
const ANTHROPIC_KEY = "sk-clients-models-an-0002"

const config = {
  groups: [
    { name: "oa", platform: "openai", models: ["gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano"] },
    { name: "an", platform: "anthropic" }
  ],
  users: [{ name: "alice", balance_usd: 10 }],
  keys: [
    { key: OPENAI_KEY, user: "alice", group: "oa" },
    { key: ANTHROPIC_KEY, user: "alice", group: "an" }
  ],
  accounts: [
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an"], model_mapping: { "claude-sonnet-4-6": "s", "claude-opus-4-6": "o" } }
  ]
}

const collect = async <T>(items: AsyncIterable<T>): Promise<Array<T>> => {
  const out: Array<T> = []
  for await (const item of items) out.push(item)
  return out
}

describe("GET /v1/models through the real SDKs", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  const anthropic = (apiKey: string) => new Anthropic({ baseURL: gw.url, apiKey, maxRetries: 0 })

  it("the openai SDK iterates the group's ids", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 })
    const models = await collect(client.models.list())
    expect(models.map((m) => m.id)).toEqual(["gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano"])
    expect(models.every((m) => m.object === "model" && m.owned_by === "openai" && Number.isInteger(m.created))).toBe(true)
  })

  it("the Anthropic SDK iterates the same ids once, with its own fields, and stops after the one page", async () => {
    const models = await collect(anthropic(OPENAI_KEY).models.list())
    expect(models.map((m) => m.id)).toEqual(["gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano"])
    for (const m of models) {
      expect(m.type).toBe("model")
      expect(m.display_name).toBe(m.id)
      expect(m.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)
      expect(Date.parse(m.created_at) / 1000).toBe((m as unknown as { created: number }).created)
    }
    const page = await anthropic(OPENAI_KEY).models.list()
    expect(page.has_more).toBe(false)
    expect(page.hasNextPage()).toBe(false)
    expect([page.first_id, page.last_id]).toEqual(["gpt-5.4", "gpt-5.4-nano"])
  })

  it("an Anthropic group's key lists its models to the Anthropic SDK", async () => {
    const models = await collect(anthropic(ANTHROPIC_KEY).models.list())
    expect(models.map((m) => m.id)).toEqual(["claude-opus-4-6", "claude-sonnet-4-6"])
  })

  it("the SDK's paging parameters are ignored: one page, whole", async () => {
    const client = anthropic(ANTHROPIC_KEY)
    for (const params of [{ limit: 1 }, { limit: 20 }, { after_id: "claude-opus-4-6" }, { before_id: "claude-sonnet-4-6" }]) {
      const models = await collect(client.models.list(params))
      expect(models.map((m) => m.id)).toEqual(["claude-opus-4-6", "claude-sonnet-4-6"])
    }
  })

  it("an unknown x-api-key is the SDK's AuthenticationError", async () => {
    const error: unknown = await collect(anthropic("sk-clients-models-unknown").models.list()).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(AuthenticationError)
  })

  it("models.retrieve: the openai SDK gets OpenAI's fields for a model of the key's group", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 })
    const model = await client.models.retrieve("gpt-5.4-mini")
    expect(model).toEqual({ id: "gpt-5.4-mini", object: "model", created: expect.any(Number), owned_by: "openai" })
    expect(Number.isInteger(model.created)).toBe(true)
    // An Anthropic group's model through the openai SDK: the same shape, its owner.
    const claude = await new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ANTHROPIC_KEY, maxRetries: 0 }).models.retrieve("claude-opus-4-6")
    expect([claude.id, claude.object, claude.owned_by]).toEqual(["claude-opus-4-6", "model", "anthropic"])
  })

  it("models.retrieve: the Anthropic SDK gets Anthropic's fields, on either platform's key", async () => {
    for (const [key, id] of [[ANTHROPIC_KEY, "claude-sonnet-4-6"], [OPENAI_KEY, "gpt-5.4-nano"]] as const) {
      const model = await anthropic(key).models.retrieve(id)
      expect(model).toEqual({ id, type: "model", display_name: id, created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) })
    }
  })

  it("models.retrieve of a model outside the key's group: each SDK's NotFoundError, in the envelope", async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 })
    const missing: unknown = await openai.models.retrieve("claude-sonnet-4-6").then(() => undefined, (e: unknown) => e)
    expect(missing).toBeInstanceOf(OpenAINotFound)
    expect((missing as InstanceType<typeof OpenAINotFound>).code).toBe("model_not_found")
    const other: unknown = await anthropic(ANTHROPIC_KEY).models.retrieve("gpt-5.4").then(() => undefined, (e: unknown) => e)
    expect(other).toBeInstanceOf(AnthropicNotFound)
    const res = await fetch(`${gw.url}/v1/models/no-such-model`, { headers: { authorization: `Bearer ${OPENAI_KEY}` } })
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ error: { type: "invalid_request_error", code: "model_not_found", param: "model" } })
    // The list is still the list, with or without its trailing slash.
    const list = await fetch(`${gw.url}/v1/models/`, { headers: { authorization: `Bearer ${OPENAI_KEY}` } })
    expect(((await list.json()) as { data: Array<unknown> }).data).toHaveLength(3)
  })
})
