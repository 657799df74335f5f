/**
 * POST /v1/responses body checks (DESIGN.md pipeline steps 2-6), in order, with the exact texts;
 * and the body size limit answered with a 413 envelope, never a reset.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { expectEnvelope, postResponses, rawAsAnswer, rawRequest } from "./helpers.js"

const KEY = "sk-validation-0001"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: KEY, user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

const invalid = { status: 400, type: "invalid_request_error" } as const

const STREAM_TYPE = "invalid stream field type"
const PREV_V2 = "previous_response_id is only supported on Responses WebSocket v2"
const PREV_MSG = "previous_response_id must be a response.id (resp_*), not a message id"

describe("POST /v1/responses validation", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  const post = (body: unknown) => postResponses(gw.url, KEY, body)

  it("invalid JSON: 400 invalid_json", async () => {
    const res = await post("{\"model\": \"gpt-5.4\",")
    expectEnvelope(res, { ...invalid, code: "invalid_json", message: /^Failed to parse request body as JSON/ })
    expect(res.headers.get("x-should-retry")).toBe("false")
  })

  it("empty body: 400 invalid_json", async () => {
    for (const body of ["", "   "]) {
      const res = await post(body)
      expectEnvelope(res, { ...invalid, code: "invalid_json", message: "Request body is empty" })
    }
  })

  it("a JSON value that is not an object: 400 invalid_json", async () => {
    for (const body of ["[]", "\"text\"", "null", "42"]) {
      const res = await post(body)
      expectEnvelope(res, { ...invalid, code: "invalid_json", message: "Request body must be a JSON object" })
    }
  })

  it("model missing, not a string, or empty: 400 missing_model", async () => {
    for (const body of [{ input: "hi" }, { model: 5, input: "hi" }, { model: "", input: "hi" }, { model: null }, {
      model: ["gpt-5.4"]
    }]) {
      const res = await post(body)
      expectEnvelope(res, { ...invalid, code: "missing_model", message: "model is required", param: "model" })
    }
  })

  it("stream not a boolean: 400 invalid stream field type", async () => {
    for (const stream of ["true", 1, 0, null, {}]) {
      const res = await post({ model: "gpt-5.4", input: "hi", stream })
      expectEnvelope(res, { ...invalid, code: "invalid_stream_type", message: STREAM_TYPE, param: "stream" })
    }
  })

  it("stream true/false/absent is accepted", async () => {
    for (const extra of [{}, { stream: false }]) {
      const res = await post({ model: "gpt-5.4", input: "hi", ...extra })
      expect(res.status).toBe(200)
    }
    const streamed = await post({ model: "gpt-5.4", input: "hi", stream: true })
    expect(streamed.status).toBe(200)
    expect(streamed.headers.get("content-type")).toMatch(/^text\/event-stream/)
  })

  it("previous_response_id that is a response id: only on WebSocket v2", async () => {
    for (const id of ["resp_123", "resp_abc", "anything-else", 42]) {
      const res = await post({ model: "gpt-5.4", input: "hi", previous_response_id: id })
      expectEnvelope(res, { ...invalid, code: "previous_response_id_unsupported", message: PREV_V2, param: "previous_response_id" })
    }
  })

  it("previous_response_id that looks like a message id: must be a response.id", async () => {
    for (const id of ["msg_123", "message_1", "item_abc", "chatcmpl_x", "MSG_ABC"]) {
      const res = await post({ model: "gpt-5.4", input: "hi", previous_response_id: id })
      expectEnvelope(res, { ...invalid, code: "previous_response_id_not_response_id", message: PREV_MSG })
    }
  })

  it("previous_response_id null is ignored; blank is refused like any other id", async () => {
    expect((await post({ model: "gpt-5.4", input: "hi", previous_response_id: null })).status).toBe(200)
    for (const id of ["", "  "]) {
      const res = await post({ model: "gpt-5.4", input: "hi", previous_response_id: id })
      expectEnvelope(res, { ...invalid, code: "previous_response_id_unsupported", param: "previous_response_id" })
    }
  })

  it("function_call_output without its call in the input: 400 function_call_output_uncorrelated", async () => {
    const res = await post({
      model: "gpt-5.4",
      input: [
        { role: "user", content: "weather?" },
        { type: "function_call_output", call_id: "call_1", output: "sunny" }
      ]
    })
    expectEnvelope(res, { ...invalid, code: "function_call_output_uncorrelated", param: "input[1].call_id" })
    const noCallId = await post({ model: "gpt-5.4", input: [{ type: "function_call_output", output: "{}" }] })
    const error = expectEnvelope(noCallId, { ...invalid, code: "function_call_output_uncorrelated" })
    expect(error.message).toContain("Responses WebSocket v2")
    const otherCall = await post({
      model: "gpt-5.4",
      input: [
        { type: "function_call", call_id: "call_2", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "x" }
      ]
    })
    expectEnvelope(otherCall, { ...invalid, code: "function_call_output_uncorrelated", param: "input[1].call_id" })
  })

  it("function_call_output passes with the matching function_call or an item_reference", async () => {
    const withCall = await post({
      model: "gpt-5.4",
      input: [
        { role: "user", content: "weather?" },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "sunny" }
      ]
    })
    expect(withCall.status).toBe(200)
    expect((withCall.json as { output_text?: string; output: unknown }).output).toBeDefined()
    const withReference = await post({
      model: "gpt-5.4",
      input: [
        { role: "user", content: "weather?" },
        { type: "item_reference", id: "call_1" },
        { type: "function_call_output", call_id: "call_1", output: "sunny" }
      ]
    })
    expect(withReference.status).toBe(200)
  })

  describe("order", () => {
    it("model before stream", async () => {
      const res = await post({ stream: "true", previous_response_id: "resp_1" })
      expectEnvelope(res, { ...invalid, code: "missing_model" })
    })

    it("stream before previous_response_id", async () => {
      const res = await post({ model: "gpt-5.4", stream: 1, previous_response_id: "resp_1" })
      expectEnvelope(res, { ...invalid, code: "invalid_stream_type", message: STREAM_TYPE })
    })

    it("previous_response_id before function_call_output", async () => {
      const res = await post({
        model: "gpt-5.4",
        previous_response_id: "msg_1",
        input: [{ type: "function_call_output", call_id: "call_9", output: "x" }]
      })
      expectEnvelope(res, { ...invalid, code: "previous_response_id_not_response_id", message: PREV_MSG })
    })

    it("body checks before the model is looked up", async () => {
      const res = await post({
        model: "not-offered",
        input: [{ type: "function_call_output", call_id: "call_9", output: "x" }]
      })
      expectEnvelope(res, { ...invalid, code: "function_call_output_uncorrelated" })
      const unknownModel = await post({ model: "not-offered", input: "hi" })
      expectEnvelope(unknownModel, { status: 404, type: "invalid_request_error", code: "model_not_found", param: "model" })
    })

    it("JSON before model", async () => {
      const res = await post("{\"stream\": \"true\"")
      expectEnvelope(res, { ...invalid, code: "invalid_json" })
    })
  })
})

describe("body size limit", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, settings: { maxBodyBytes: 1024 } })
  })
  afterAll(() => gw.close())

  /** A valid body of exactly `bytes` bytes (ASCII), padded inside the input string. */
  const bodyOf = (bytes: number): string => {
    const empty = JSON.stringify({ model: "gpt-5.4", input: "" })
    return JSON.stringify({ model: "gpt-5.4", input: "x".repeat(bytes - empty.length) })
  }

  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" }

  it("a body at the limit is served", async () => {
    const body = bodyOf(1024)
    expect(Buffer.byteLength(body)).toBe(1024)
    const res = await postResponses(gw.url, KEY, body)
    expect(res.status).toBe(200)
  })

  it("a 2 KB body with content-length: 413 envelope, and the connection answers (no reset)", async () => {
    const body = bodyOf(2048)
    const raw = await rawRequest(gw.url, "/v1/responses", {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      body
    })
    expectEnvelope(rawAsAnswer(raw), {
      status: 413,
      type: "invalid_request_error",
      code: "request_too_large",
      message: "Request body too large, limit is 1024 bytes"
    })
    // The same through fetch, which reports a reset as a thrown error.
    const viaFetch = await postResponses(gw.url, KEY, body)
    expectEnvelope(viaFetch, { status: 413, type: "invalid_request_error", code: "request_too_large" })
  })

  it("one byte over the limit: 413", async () => {
    const res = await postResponses(gw.url, KEY, bodyOf(1025))
    expectEnvelope(res, { status: 413, type: "invalid_request_error", code: "request_too_large" })
  })

  it("a chunked body (no content-length) over the limit: 413 envelope", async () => {
    const body = bodyOf(2048)
    const chunks = [body.slice(0, 600), body.slice(600, 1200), body.slice(1200, 1800), body.slice(1800)]
    const raw = await rawRequest(gw.url, "/v1/responses", { method: "POST", headers, chunks, gapMs: 20 })
    expectEnvelope(rawAsAnswer(raw), { status: 413, type: "invalid_request_error", code: "request_too_large" })
  })

  it("a chunked body under the limit is served", async () => {
    const body = bodyOf(900)
    const raw = await rawRequest(gw.url, "/v1/responses", {
      method: "POST",
      headers,
      chunks: [body.slice(0, 300), body.slice(300, 600), body.slice(600)],
      gapMs: 5
    })
    expect(raw.status).toBe(200)
    expect(JSON.parse(raw.text)).toMatchObject({ object: "response", model: "gpt-5.4" })
  })

  it("the server still serves after refusing large bodies", async () => {
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    expect(res.status).toBe(200)
  })
})
