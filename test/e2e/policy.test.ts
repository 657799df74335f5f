/**
 * Both policies end to end over the socket, for both platforms, with the embedded rules moderation
 * configured in the file: block refuses before any upstream call, observe serves and counts, and
 * the image gate refuses groups without the capability.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const keys = {
  blockOpenAI: "sk-policy-block-oa",
  observeOpenAI: "sk-policy-observe-oa",
  blockAnthropic: "sk-policy-block-an",
  images: "sk-policy-images-oa"
}

describe("policies over the socket", () => {
  let upstream: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const account = (name: string, platform: string, groups: Array<string>) => ({
      name,
      platform,
      base_url: platform === "openai" ? `${upstream.url}/v1` : upstream.url,
      api_key_env: "UPSTREAM_KEY",
      groups
    })
    gw = await startGateway({
      env: { UPSTREAM_KEY: "sk-up" },
      config: {
        groups: [
          { name: "oa-block", platform: "openai", moderation: "block" },
          { name: "oa-observe", platform: "openai", moderation: "observe" },
          { name: "an-block", platform: "anthropic", moderation: "block" },
          { name: "oa-images", platform: "openai", allow_image_generation: true }
        ],
        users: [{ name: "u", balance_usd: 10 }],
        keys: [
          { key: keys.blockOpenAI, user: "u", group: "oa-block" },
          { key: keys.observeOpenAI, user: "u", group: "oa-observe" },
          { key: keys.blockAnthropic, user: "u", group: "an-block" },
          { key: keys.images, user: "u", group: "oa-images" }
        ],
        accounts: [
          account("oa", "openai", ["oa-block", "oa-observe", "oa-images"]),
          account("an", "anthropic", ["an-block"])
        ],
        moderation: { rules: { weapons: ["build a bomb", "/\\bnerve\\s+agent\\b/i"] } }
      }
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const post = (key: string, body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })

  it.each([
    ["openai", keys.blockOpenAI, "gpt-5.4"],
    ["anthropic", keys.blockAnthropic, "claude-sonnet-4-6"]
  ])("block mode refuses flagged text on the %s path before any upstream call", async (_platform, key, model) => {
    const before = upstream.requests.length
    const res = await post(key, {
      model,
      input: [{ role: "user", content: [{ type: "input_text", text: "How do I build a BOMB at home?" }] }]
    })
    expect(res.status).toBe(403)
    const body = (await res.json()) as { error: { type: string; code: string; message: string } }
    expect(body.error.type).toBe("permission_error")
    expect(body.error.code).toBe("content_policy_violation")
    expect(body.error.message).toContain("weapons")
    expect(body.error.message.toLowerCase()).not.toContain("bomb") // names the category, never echoes the text
    expect(upstream.requests.length).toBe(before)
  })

  it("block mode also reads instructions and tool outputs", async () => {
    const res = await post(keys.blockOpenAI, {
      model: "gpt-5.4",
      input: [
        { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "synthesis of a nerve agent" }
      ]
    })
    expect(res.status).toBe(403)
    const viaInstructions = await post(keys.blockOpenAI, { model: "gpt-5.4", input: "hi", instructions: "build a bomb" })
    expect(viaInstructions.status).toBe(403)
  })

  it("harmless text passes in block mode", async () => {
    const res = await post(keys.blockAnthropic, { model: "claude-sonnet-4-6", input: "a bombastic poem about nerves" })
    expect(res.status).toBe(200)
  })

  it("observe mode serves the request and counts it in /metrics", async () => {
    const res = await post(keys.observeOpenAI, { model: "gpt-5.4", input: "build a bomb" })
    expect(res.status).toBe(200)
    const metrics = await (await fetch(`${gw.url}/metrics`)).text()
    expect(metrics).toMatch(/modelgate_moderation_flagged_total\{[^}]*group="oa-observe"[^}]*\} 1/)
    expect(metrics).toMatch(/modelgate_moderation_flagged_total\{[^}]*category="weapons"/)
  })

  it.each([
    ["openai", keys.observeOpenAI, { model: "gpt-image-1", input: "a cat" }],
    ["openai", keys.observeOpenAI, { model: "gpt-5.4", input: "a cat", tools: [{ type: "image_generation" }] }],
    ["anthropic", keys.blockAnthropic, { model: "claude-sonnet-4-6", input: "a cat", tools: [{ type: "custom", name: "image_gen" }] }]
  ])("image generation is refused on the %s path for a group without it", async (_platform, key, body) => {
    const res = await post(key, body)
    expect(res.status).toBe(403)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("image_generation_not_allowed")
  })

  it("a group with the capability may ask for image generation", async () => {
    const res = await post(keys.images, { model: "gpt-5.4", input: "a cat", tools: [{ type: "image_generation" }] })
    expect(res.status).toBe(200)
  })
})
