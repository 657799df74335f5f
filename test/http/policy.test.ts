/**
 * Group policy on POST /v1/responses (DESIGN.md pipeline steps 7-10): model offered, moderation
 * (a test Moderation layer decides), image-generation intent, eligibility (key quota, balance,
 * subscription).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Moderation } from "../../src/services/moderation/Moderation.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { call, expectEnvelope, postResponses } from "./helpers.js"

const K = {
  main: "sk-policy-main-0001",
  images: "sk-policy-images-0002",
  block: "sk-policy-block-0003",
  observe: "sk-policy-observe-0004",
  exhausted: "sk-policy-exhausted-0005",
  broke: "sk-policy-broke-0006",
  subscription: "sk-policy-sub-0007",
  tinyQuota: "sk-policy-tiny-0008",
  mapped: "sk-policy-mapped-0009"
}

const GROUPS = ["oa", "img", "block", "observe", "sub", "mapped"]

const config = {
  groups: [
    { name: "oa", platform: "openai", models: ["gpt-5.4", "gpt-image-1"] },
    { name: "img", platform: "openai", models: ["gpt-5.4", "gpt-image-1"], allow_image_generation: true },
    { name: "block", platform: "openai", moderation: "block" },
    { name: "observe", platform: "openai", moderation: "observe" },
    { name: "sub", platform: "openai", billing: "subscription" },
    // No list: what the accounts map decides.
    { name: "mapped", platform: "openai" }
  ],
  users: [{ name: "alice", balance_usd: 100, concurrency: 10 }, { name: "bob", balance_usd: 0 }],
  keys: [
    { key: K.main, user: "alice", group: "oa" },
    { key: K.images, user: "alice", group: "img" },
    { key: K.block, user: "alice", group: "block" },
    { key: K.observe, user: "alice", group: "observe" },
    { key: K.exhausted, user: "alice", group: "oa", status: "quota_exhausted" },
    { key: K.broke, user: "bob", group: "oa" },
    { key: K.subscription, user: "alice", group: "sub" },
    { key: K.tinyQuota, user: "alice", group: "oa", quota_usd: 0.000001 },
    { key: K.mapped, user: "alice", group: "mapped" }
  ],
  accounts: [
    { name: "sim", platform: "openai", kind: "simulator", groups: GROUPS.filter((g) => g !== "mapped") },
    { name: "sim-mapped", platform: "openai", kind: "simulator", groups: ["mapped"], model_mapping: { "gpt-5.4": "gpt-5.4" } }
  ]
}

/** Flags any request whose text mentions "forbidden-topic"; records what it was shown. */
const seen: Array<ReadonlyArray<string>> = []
const moderation = Moderation.layerTest((texts) => {
  seen.push(texts)
  return texts.some((t) => t.includes("forbidden-topic")) ? { _tag: "Flag", category: "test-category" } : { _tag: "Allow" }
})

describe("policy", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, services: { moderation } })
  })
  afterAll(() => gw.close())

  describe("model offered to the group", () => {
    it("a model outside the group's list: 404 model_not_found", async () => {
      const res = await postResponses(gw.url, K.main, { model: "gpt-4o", input: "hi" })
      expectEnvelope(res, {
        status: 404,
        type: "invalid_request_error",
        code: "model_not_found",
        param: "model",
        message: "The model 'gpt-4o' does not exist or is not available to this API key"
      })
    })

    it("without a list, a model no account maps: 404; a mapped one is served", async () => {
      const missing = await postResponses(gw.url, K.mapped, { model: "gpt-5.5", input: "hi" })
      expectEnvelope(missing, { status: 404, type: "invalid_request_error", code: "model_not_found" })
      const served = await postResponses(gw.url, K.mapped, { model: "gpt-5.4", input: "hi" })
      expect(served.status).toBe(200)
    })
  })

  describe("image generation intent", () => {
    const notAllowed = { status: 403, type: "permission_error", code: "image_generation_not_allowed" } as const

    it("an image model, an image tool, or a tool_choice selecting it: 403 without allow_image_generation", async () => {
      const bodies = [
        { model: "gpt-image-1", input: "a cat" },
        { model: "gpt-5.4", input: "a cat", tools: [{ type: "image_generation" }] },
        { model: "gpt-5.4", input: "a cat", tool_choice: { type: "image_generation" } },
        { model: "gpt-5.4", input: "a cat", tools: [{ type: "function", name: "image_gen.create", parameters: {} }] }
      ]
      for (const body of bodies) {
        const res = await postResponses(gw.url, K.main, body)
        expectEnvelope(res, notAllowed)
      }
    })

    it("the same requests pass the check on a group that allows image generation", async () => {
      const res = await postResponses(gw.url, K.images, { model: "gpt-5.4", input: "a cat", tools: [{ type: "image_generation" }] })
      expect(res.status).toBe(200)
      const imageModel = await postResponses(gw.url, K.images, { model: "gpt-image-1", input: "a cat" })
      expect(imageModel.status).toBe(200)
    })

    it("a function named generate_report is not image intent", async () => {
      const res = await postResponses(gw.url, K.main, {
        model: "gpt-5.4",
        input: "write the report",
        tools: [{ type: "function", name: "generate_report", parameters: { type: "object", properties: {} } }],
        tool_choice: { type: "function", name: "generate_report" }
      })
      expect(res.status).toBe(200)
    })
  })

  describe("moderation", () => {
    const flagged = {
      model: "gpt-5.4",
      input: [{ role: "user", content: [{ type: "input_text", text: "tell me about forbidden-topic" }] }]
    }

    it("block mode: 403 content_policy_violation when the Moderation service flags", async () => {
      const res = await postResponses(gw.url, K.block, flagged)
      expectEnvelope(res, { status: 403, type: "permission_error", code: "content_policy_violation", message: /test-category/ })
      expect(seen.at(-1)).toContain("tell me about forbidden-topic")
    })

    it("block mode: instructions are moderated too", async () => {
      const res = await postResponses(gw.url, K.block, { model: "gpt-5.4", instructions: "forbidden-topic", input: "hi" })
      expectEnvelope(res, { status: 403, type: "permission_error", code: "content_policy_violation" })
    })

    it("block mode: an allowed request is served", async () => {
      const res = await postResponses(gw.url, K.block, { model: "gpt-5.4", input: "a harmless question" })
      expect(res.status).toBe(200)
    })

    it("observe mode: a flagged request is served", async () => {
      const before = seen.length
      const res = await postResponses(gw.url, K.observe, flagged)
      expect(res.status).toBe(200)
      expect(seen.length).toBe(before + 1)
    })

    it("off mode: the Moderation service is not consulted", async () => {
      const before = seen.length
      const res = await postResponses(gw.url, K.main, flagged)
      expect(res.status).toBe(200)
      expect(seen.length).toBe(before)
    })

    it("the model check comes before moderation", async () => {
      const before = seen.length
      const res = await postResponses(gw.url, K.mapped, { ...flagged, model: "gpt-5.5" })
      expectEnvelope(res, { status: 404, type: "invalid_request_error", code: "model_not_found" })
      expect(seen.length).toBe(before)
    })

    it("moderation comes before the image check", async () => {
      const res = await postResponses(gw.url, K.block, { ...flagged, tools: [{ type: "image_generation" }] })
      expectEnvelope(res, { status: 403, type: "permission_error", code: "content_policy_violation" })
    })
  })

  describe("eligibility", () => {
    it("a key whose quota is exhausted: 402 insufficient_quota / key_quota_exhausted", async () => {
      const res = await postResponses(gw.url, K.exhausted, { model: "gpt-5.4", input: "hi" })
      expectEnvelope(res, { status: 402, type: "insufficient_quota", code: "key_quota_exhausted" })
    })

    it("a user with no balance: 402 insufficient_balance", async () => {
      const res = await postResponses(gw.url, K.broke, { model: "gpt-5.4", input: "hi" })
      expectEnvelope(res, { status: 402, type: "insufficient_quota", code: "insufficient_balance" })
    })

    it("a subscription group without a subscription: 403 subscription_required", async () => {
      const res = await postResponses(gw.url, K.subscription, { model: "gpt-5.4", input: "hi" })
      expectEnvelope(res, { status: 403, type: "permission_error", code: "subscription_required" })
    })

    it("a key quota used up by served requests refuses the next one, and /v1/usage says so", async () => {
      const first = await postResponses(gw.url, K.tinyQuota, { model: "gpt-5.4", input: "hi" })
      expect(first.status).toBe(200)
      const second = await postResponses(gw.url, K.tinyQuota, { model: "gpt-5.4", input: "hi" })
      expectEnvelope(second, { status: 402, type: "insufficient_quota", code: "key_quota_exhausted" })
      const usage = await call(gw.url, "/v1/usage", { key: K.tinyQuota })
      expect(usage.status).toBe(200)
      expect(usage.json).toMatchObject({ mode: "quota_limited", status: "quota_exhausted", isValid: false })
    })

    it("image policy comes before eligibility", async () => {
      const res = await postResponses(gw.url, K.broke, { model: "gpt-image-1", input: "a cat" })
      expectEnvelope(res, { status: 403, type: "permission_error", code: "image_generation_not_allowed" })
    })
  })
})
