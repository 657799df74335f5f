/**
 * An upstream that answers 200 with a body that is not JSON (issue 16, item 6): another account is
 * tried while nothing reached the client; with none left the client gets a typed upstream failure
 * in the envelope (502 upstream_invalid_response), on both platforms, never a 500 or the body
 * passed on as an answer, and nothing is billed.
 */
import { describe, expect, it } from "@effect/vitest"
import { call, expectEnvelope, postResponses } from "../http/helpers.js"
import { startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, startWithFakeUpstream } from "../support/gateway.js"
import { fakeUpstreamGatewayForBlock } from "../support/block.js"

describe("an upstream answer that is not JSON", () => {
  const block = fakeUpstreamGatewayForBlock()

  it.each([
    ["sk-test-openai-0001", "gpt-5.4"],
    ["sk-test-anthropic-0001", "claude-sonnet-4-6"]
  ])("is a 502 upstream_invalid_response for %s", async (key, model) => {
    block.upstream.setFault({ _tag: "Status", status: 200, body: "<html>gateway timeout</html>" })
    try {
      const res = await postResponses(block.gw.url, key, { model, input: "hi" })
      const error = expectEnvelope(res, { status: 502, type: "upstream_error", code: "upstream_invalid_response" })
      expect(error.message).toContain("not JSON")
      expect(res.text).not.toContain("<html>")
    } finally {
      block.upstream.setFault(undefined)
    }
    const after = await postResponses(block.gw.url, key, { model, input: "hi again" })
    expect(after.status).toBe(200)
    // Only the answer that was served is billed.
    const usage = await call(block.gw.url, "/v1/usage", { key })
    expect((usage.json as { usage: { total: { requests: number } } }).usage.total.requests).toBe(1)
  })
})

describe("an upstream answer that is not JSON, with another account to try", () => {
  it("fails over to the next account and answers 200, billed once", async () => {
    const upstream = await startFakeUpstream()
    const base = fakeUpstreamConfig(upstream.url)
    const second = { ...base.accounts[0]!, name: "fake-openai-2" }
    const gw = await startGateway({ config: { ...base, accounts: [...base.accounts, second] }, env: fakeUpstreamEnv })
    try {
      upstream.setFaults([{ _tag: "Status", status: 200, body: "<html>bad gateway</html>" }])
      const res = await postResponses(gw.url, "sk-test-openai-0001", { model: "gpt-5.4", input: "hi" })
      expect(res.status).toBe(200)
      expect((res.json as { status: string }).status).toBe("completed")
      expect(upstream.requests.filter((r) => r.path === "/v1/responses")).toHaveLength(2)
      const usage = await call(gw.url, "/v1/usage", { key: "sk-test-openai-0001" })
      expect((usage.json as { usage: { total: { requests: number } } }).usage.total.requests).toBe(1)
    } finally {
      await gw.close()
      await upstream.close()
    }
  })
})

describe("an upstream refusal that echoes the account's key (issue 16, item 8)", () => {
  it("reaches the client with its words but without the key or the account's name", async () => {
    const { upstream, gw, close } = await startWithFakeUpstream()
    try {
      upstream.setFault({
        _tag: "Status",
        status: 400,
        body: { error: { type: "invalid_request_error", code: "bad_header", message: "Unsupported header 'authorization: Bearer sk-upstream-openai' in request" } }
      })
      const res = await postResponses(gw.url, "sk-test-openai-0001", { model: "gpt-5.4", input: "hi" })
      const error = expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "bad_header" })
      expect(error.message).toContain("Unsupported header")
      expect(res.text).not.toContain("sk-upstream-openai")
      expect(res.text).not.toContain("fake-openai")
    } finally {
      upstream.setFault(undefined)
      await close()
    }
  })
})
