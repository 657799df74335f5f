/**
 * A group with no accounts at all is a configuration error, not a busy upstream: 503
 * `no_accounts_configured` with `x-should-retry: false` on both doors. On the Messages door it is
 * not the 529 `overloaded_error` that the Anthropic SDK and Claude Code wait out: the SDK, told to
 * retry twice, asks once. Over real sockets, the SDKs as the clients.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { expectEnvelope, postResponses } from "./helpers.js"

const OA_KEY = "sk-no-accounts-openai-0001"
const AN_KEY = "sk-no-accounts-anthropic-0001"

const config = {
  groups: [{ name: "bare-oa", platform: "openai" }, { name: "bare-an", platform: "anthropic" }],
  users: [{ name: "nell", balance_usd: 10, concurrency: 4 }],
  keys: [
    { key: OA_KEY, user: "nell", group: "bare-oa", name: "bare-oa-key" },
    { key: AN_KEY, user: "nell", group: "bare-an", name: "bare-an-key" }
  ],
  accounts: []
}

/** A fetch that counts the requests an SDK makes. */
const counting = () => {
  const counter = { calls: 0 }
  const fetchCounted: typeof fetch = (input, init) => {
    counter.calls++
    return fetch(input, init)
  }
  return { counter, fetchCounted }
}

describe("a group with no accounts at all", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  it("Responses door: 503 no_accounts_configured, x-should-retry: false; the openai SDK does not retry", async () => {
    const res = await postResponses(gw.url, OA_KEY, { model: "gpt-5.4", input: "hi" })
    expectEnvelope(res, { status: 503, type: "api_error", code: "no_accounts_configured" })
    expect(res.headers.get("x-should-retry")).toBe("false")
    expect(res.headers.get("retry-after")).toBeNull()
    const { counter, fetchCounted } = counting()
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: OA_KEY, maxRetries: 2, fetch: fetchCounted })
    const error = await client.responses.create({ model: "gpt-5.4", input: "hi" }).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("no_accounts_configured")
    expect(counter.calls).toBe(1)
  })

  it.each([
    { door: "anthropic group", key: AN_KEY, model: "claude-sonnet-4-5" },
    { door: "openai group", key: OA_KEY, model: "gpt-5.4" }
  ])("Messages door on an $door: 503 api_error, not 529 overloaded_error; the Anthropic SDK asks once", async ({ key, model }) => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
    })
    expect(res.status).toBe(503)
    expect(res.headers.get("x-should-retry")).toBe("false")
    expect(await res.json()).toMatchObject({
      type: "error",
      error: { type: "api_error", details: { error_code: "no_accounts_configured" } }
    })
    const { counter, fetchCounted } = counting()
    const client = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 2, fetch: fetchCounted })
    const error = await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] })
      .then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.InternalServerError)
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(503)
    expect(counter.calls).toBe(1)
  })
})
