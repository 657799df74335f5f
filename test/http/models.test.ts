/**
 * GET /v1/models and GET /antigravity/models (DESIGN.md "GET /v1/models"): the OpenAI list shape;
 * the group's list, else the union of its accounts' mappings, else the platform defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { defaultModels } from "../../src/config/defaultModels.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope } from "./helpers.js"

const K = {
  images: "sk-models-images-0001",
  listed: "sk-models-listed-0001",
  mapped: "sk-models-mapped-0002",
  plain: "sk-models-plain-0003",
  anthropic: "sk-models-anthropic-0004",
  custom: "sk-models-custom-0005"
}

const config = {
  groups: [
    { name: "listed", platform: "openai", models: ["gpt-5.4-mini", "gpt-5.4"] },
    { name: "mapped", platform: "openai" },
    { name: "plain", platform: "openai" },
    { name: "images", platform: "openai", allow_image_generation: true },
    { name: "an", platform: "anthropic" }
  ],
  users: [{ name: "alice", balance_usd: 10 }],
  keys: [
    { key: K.listed, user: "alice", group: "listed" },
    { key: K.mapped, user: "alice", group: "mapped" },
    { key: K.plain, user: "alice", group: "plain" },
    { key: K.images, user: "alice", group: "images" },
    { key: K.anthropic, user: "alice", group: "an" }
  ],
  accounts: [
    { name: "sim-listed", platform: "openai", kind: "simulator", groups: ["listed"], model_mapping: { "other-model": "x" } },
    { name: "sim-mapped-1", platform: "openai", kind: "simulator", groups: ["mapped"], model_mapping: { "gpt-b": "b", "gpt-a": "a" } },
    { name: "sim-mapped-2", platform: "openai", kind: "simulator", groups: ["mapped"], model_mapping: { "gpt-c": "c", "gpt-a": "a2" } },
    // Another platform's account in the same group name does not count.
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an", "mapped"], model_mapping: { "claude-x": "y" } },
    { name: "sim-plain", platform: "openai", kind: "simulator", groups: ["plain", "images"] }
  ]
}

interface ModelList {
  readonly object: string
  readonly data: ReadonlyArray<{ id: string; object: string; created: number; owned_by: string }>
}

describe("GET /v1/models", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  const list = async (key: string, path = "/v1/models"): Promise<ModelList> => {
    const res = await call(gw.url, path, { key })
    expect(res.status).toBe(200)
    return res.json as ModelList
  }

  it("has the OpenAI list shape, with Anthropic's fields beside it", async () => {
    const body = await list(K.listed)
    expect(Object.keys(body).sort()).toEqual(["data", "first_id", "has_more", "last_id", "object"])
    expect(body.object).toBe("list")
    for (const m of body.data) {
      expect(Object.keys(m).sort()).toEqual(["created", "created_at", "display_name", "id", "object", "owned_by", "type"])
      expect(m.object).toBe("model")
      expect(Number.isInteger(m.created)).toBe(true)
      expect(m.owned_by).toBe("openai")
    }
  })

  it("a group with a list: exactly that list, in its order", async () => {
    expect((await list(K.listed)).data.map((m) => m.id)).toEqual(["gpt-5.4-mini", "gpt-5.4"])
  })

  it("a group without a list: the union of its accounts' mapping keys on its platform", async () => {
    expect((await list(K.mapped)).data.map((m) => m.id)).toEqual(["gpt-a", "gpt-b", "gpt-c"])
  })

  it("a group with neither: the platform's default list, less image models for a group without image generation", async () => {
    expect((await list(K.plain)).data.map((m) => m.id)).toEqual(defaultModels.openai.filter((m) => !m.startsWith("gpt-image-")))
    const anthropic = await list(K.anthropic)
    expect(anthropic.data.map((m) => m.id)).toEqual(["claude-x"])
    expect(anthropic.data.every((m) => m.owned_by === "anthropic")).toBe(true)
  })

  it("a group that may generate images lists the image models too", async () => {
    expect((await list(K.images)).data.map((m) => m.id)).toEqual([...defaultModels.openai])
    expect(defaultModels.openai.some((m) => m.startsWith("gpt-image-"))).toBe(true)
  })

  it("/antigravity/models: the antigravity default list whatever the key's group", async () => {
    const body = await list(K.listed, "/antigravity/models")
    expect(body.object).toBe("list")
    expect(body.data.map((m) => m.id)).toEqual([...defaultModels.antigravity])
    expect(body.data.every((m) => m.owned_by === "antigravity")).toBe(true)
  })

  it("needs a key", async () => {
    expectEnvelope(await call(gw.url, "/v1/models"), { status: 401, type: "authentication_error", code: "missing_api_key" })
    expectEnvelope(await call(gw.url, "/antigravity/models"), { status: 401, type: "authentication_error", code: "missing_api_key" })
  })
})

describe("GET /v1/models with default_models in the config", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      config: {
        groups: [{ name: "an", platform: "anthropic" }],
        users: [{ name: "alice" }],
        keys: [{ key: K.custom, user: "alice", group: "an" }],
        accounts: [{ name: "sim", platform: "anthropic", kind: "simulator", groups: ["an"] }],
        default_models: { anthropic: ["claude-custom-1"] }
      }
    })
  })
  afterAll(() => gw.close())

  it("the configured defaults replace the built-in ones", async () => {
    const res = await call(gw.url, "/v1/models", { key: K.custom })
    expect((res.json as ModelList).data.map((m) => m.id)).toEqual(["claude-custom-1"])
  })
})
