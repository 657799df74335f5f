/**
 * The demo `npm start` serves with no config (src/config/demo.ts) tells the truth: its groups offer
 * the models the README, the start banner and Claude Code use and refuse others as a real
 * configuration does; every answer has its own id; Claude Code's "Say hello" gets text.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { DEMO_KEY, demoConfig } from "../../src/config/demo.js"
import { call, expectEnvelope, postResponses, readEvents } from "../http/helpers.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { claudeCodeTools } from "./agentTools.js"

const ANTHROPIC_KEY = "sk-modelgate-demo-anthropic-000000"

const postMessages = (gw: TestGateway, key: string, body: unknown) =>
  call(gw.url, "/v1/messages", { headers: { "x-api-key": key, "anthropic-version": "2023-06-01" }, body })

describe("the demo configuration", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config: demoConfig })
  })
  afterAll(() => gw.close())

  it("lists each group's models", async () => {
    const openai = await call(gw.url, "/v1/models", { key: DEMO_KEY })
    const anthropic = await call(gw.url, "/v1/models", { key: ANTHROPIC_KEY })
    const ids = (answer: typeof openai) => (answer.json as { data: Array<{ id: string }> }).data.map((m) => m.id)
    expect(ids(openai)).toContain("gpt-5.4")
    expect(ids(openai).every((id) => id.startsWith("gpt-"))).toBe(true)
    expect(ids(anthropic)).toEqual(expect.arrayContaining(["claude-sonnet-4-6", "claude-opus-5-5", "claude-haiku-4-5-20251001"]))
    expect(ids(anthropic).every((id) => id.startsWith("claude-"))).toBe(true)
  })

  it("refuses a model its group does not offer with 404 model_not_found, on every door", async () => {
    expectEnvelope(await postResponses(gw.url, DEMO_KEY, { model: "no-such-model", input: "hi" }), {
      status: 404,
      type: "invalid_request_error",
      code: "model_not_found"
    })
    // Another platform's model is unknown here too.
    expectEnvelope(await postResponses(gw.url, ANTHROPIC_KEY, { model: "gpt-5.4", input: "hi" }), {
      status: 404,
      type: "invalid_request_error",
      code: "model_not_found"
    })
    const messages = await postMessages(gw, ANTHROPIC_KEY, { model: "claude-nonexistent-1", max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
    expect(messages.status).toBe(404)
    expect(messages.json).toMatchObject({ type: "error", error: { type: "not_found_error" } })
  })

  it("serves the models of the README's walk-through, the banner and Claude Code", async () => {
    const answers = [
      await postResponses(gw.url, DEMO_KEY, { model: "gpt-5.4", input: "Hello!" }),
      await postResponses(gw.url, ANTHROPIC_KEY, { model: "claude-sonnet-4-6", input: "Hi" }),
      await postMessages(gw, DEMO_KEY, { model: "gpt-5.4", max_tokens: 256, messages: [{ role: "user", content: "Hi" }] }),
      await postMessages(gw, ANTHROPIC_KEY, { model: "claude-sonnet-4-6", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] }),
      // Claude Code's default model, and its small fast one.
      await postMessages(gw, ANTHROPIC_KEY, { model: "claude-opus-5-5", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] }),
      await postMessages(gw, ANTHROPIC_KEY, { model: "claude-haiku-4-5-20251001", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] })
    ]
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    const stream = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${DEMO_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: "Hello!", stream: true })
    })
    expect((await readEvents(stream)).events.at(-1)?.["type"]).toBe("response.completed")
  })

  it("gives two identical requests two answers with their own ids", async () => {
    const body = { model: "gpt-5.4", input: "Hello!" }
    const [a, b] = [await postResponses(gw.url, DEMO_KEY, body), await postResponses(gw.url, DEMO_KEY, body)]
    const responseIds = [a, b].map((r) => (r.json as { id: string }).id)
    expect(responseIds[0]).toMatch(/^resp_/)
    expect(responseIds[0]).not.toBe(responseIds[1])
    const messages = { model: "claude-sonnet-4-6", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] }
    const [c, d] = [await postMessages(gw, ANTHROPIC_KEY, messages), await postMessages(gw, ANTHROPIC_KEY, messages)]
    const messageIds = [c, d].map((r) => (r.json as { id: string }).id)
    expect(messageIds[0]).toMatch(/^msg_/)
    expect(messageIds[0]).not.toBe(messageIds[1])
  })

  it("answers Claude Code's \"Say hello\" with text, though it sends a dozen tools", async () => {
    const answer = await postMessages(gw, ANTHROPIC_KEY, {
      model: "claude-opus-5-5",
      max_tokens: 32000,
      tools: claudeCodeTools,
      messages: [{ role: "user", content: [{ type: "text", text: "<system-reminder>cwd: /home/me/app</system-reminder>" }, { type: "text", text: "Say hello" }] }]
    })
    expect(answer.json).toMatchObject({ stop_reason: "end_turn", content: [{ type: "text" }] })
    const ran = await postMessages(gw, ANTHROPIC_KEY, {
      model: "claude-opus-5-5",
      max_tokens: 32000,
      tools: claudeCodeTools,
      messages: [{ role: "user", content: "run echo hello" }]
    })
    expect(ran.json).toMatchObject({ stop_reason: "tool_use", content: [{ type: "tool_use", name: "Bash", input: { command: "echo hello" } }] })
  })
})
