/**
 * `previous_response_id` over HTTP, as docs/errors.md says: a blank or whitespace id is refused like
 * any other (400 `previous_response_id_unsupported`: HTTP keeps no history), and `null` is absent,
 * so the upstream never sees it, even where the gateway forwards the client's own bytes. Over real
 * sockets, against a fake upstream that records each body.
 */
import { describe, expect, it } from "@effect/vitest"
import { fakeUpstreamGatewayForBlock } from "../support/block.js"
import { expectEnvelope, postResponses, readEvents } from "./helpers.js"

const KEY = "sk-test-openai-0001"

describe("previous_response_id over HTTP", () => {
  const block = fakeUpstreamGatewayForBlock()

  it.each(["", "   ", "\t"])("%j is refused with 400 previous_response_id_unsupported; the upstream is not asked", async (id) => {
    const before = block.upstream.requests.length
    const res = await postResponses(block.gw.url, KEY, { model: "gpt-5.4-mini", input: "hi", previous_response_id: id })
    expectEnvelope(res, { status: 400, type: "invalid_request_error", code: "previous_response_id_unsupported", param: "previous_response_id" })
    expect(res.headers.get("x-should-retry")).toBe("false")
    expect(block.upstream.requests.length).toBe(before)
  })

  // gpt-5.4-mini is forwarded under its own name (the client's bytes), gpt-5.4 under a mapped one.
  it.each(["gpt-5.4-mini", "gpt-5.4"])("null is absent: %s is served and the upstream body has no previous_response_id", async (model) => {
    const before = block.upstream.requests.length
    const raw = `{"model":${JSON.stringify(model)},"previous_response_id":null,"input":"null is absent"}`
    const res = await postResponses(block.gw.url, KEY, raw)
    expect(res.status).toBe(200)
    const seen = block.upstream.requests.slice(before)
    expect(seen).toHaveLength(1)
    const body = seen[0]!.body as Record<string, unknown>
    expect(body["input"]).toBe("null is absent")
    expect(Object.keys(body)).not.toContain("previous_response_id")
  })

  it("null is absent on a stream too", async () => {
    const before = block.upstream.requests.length
    const res = await fetch(`${block.gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: `{"model":"gpt-5.4-mini","stream":true,"previous_response_id":null,"input":"streamed"}`
    })
    expect(res.status).toBe(200)
    const { events } = await readEvents(res)
    expect(events.at(-1)?.["type"]).toBe("response.completed")
    const body = block.upstream.requests[before]?.body as Record<string, unknown>
    expect(body).toMatchObject({ input: "streamed", stream: true })
    expect(Object.keys(body)).not.toContain("previous_response_id")
  })
})
