/**
 * An upstream that answers 200 with a body that is not JSON: the client gets a typed upstream
 * failure in the envelope (502 upstream_invalid_response), on both platforms, never a 500 or a
 * body passed on as if it were an answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "../support/gateway.js"
import { expectEnvelope, postResponses } from "../core/helpers.js"

describe("an upstream answer that is not JSON", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ upstream, gw, close } = await startWithFakeUpstream())
  })
  afterAll(() => close())

  it.each([
    ["sk-test-openai-0001", "gpt-5.4"],
    ["sk-test-anthropic-0001", "claude-sonnet-4-6"]
  ])("is a 502 upstream_invalid_response for %s", async (key, model) => {
    upstream.setFault({ _tag: "Status", status: 200, body: "<html>gateway timeout</html>" })
    try {
      const res = await postResponses(gw.url, key, { model, input: "hi" })
      const error = expectEnvelope(res, { status: 502, type: "upstream_error", code: "upstream_invalid_response" })
      expect(error.message).toContain("not JSON")
      expect(res.text).not.toContain("<html>")
    } finally {
      upstream.setFault(undefined)
    }
    const after = await postResponses(gw.url, key, { model, input: "hi again" })
    expect(after.status).toBe(200)
  })
})
