/**
 * POST /v1/messages answered, JSON and stream, for a key of each platform, judged by the Anthropic
 * SDK (its types, its strict stream accumulator) and by the raw bytes. An Anthropic group passes
 * through: the client gets the upstream's bytes and the upstream gets the client's body and its
 * `anthropic-version` / `anthropic-beta`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { DOORS, keyFor, type MessagesSetup, postMessages, sdk, sseFrames, startMessagesGateway } from "../support/messagesGateway.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

const last = () => setup.upstream.requests.at(-1)!

describe.each(DOORS)("messages answers, $platform group", (door) => {
  const key = keyFor(door, "main")

  it("messages.create: a text answer under the requested model, with usage", async () => {
    const client = sdk(setup.gw, key)
    const message = await client.messages.create({
      model: door.model,
      max_tokens: 256,
      system: "Be brief.",
      messages: [{ role: "user", content: "Say hello to the gateway" }]
    })
    expect(message.type).toBe("message")
    expect(message.role).toBe("assistant")
    expect(message.model).toBe(door.model)
    expect(message.stop_reason).toBe("end_turn")
    const text = message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
    // The simulated model quotes the prompt: the answer is this request's, not another's.
    expect(text).toContain("Say hello to the gateway")
    expect(message.usage.input_tokens).toBeGreaterThan(0)
    expect(message.usage.output_tokens).toBeGreaterThan(0)
    const sent = last()
    if (door.passthrough) {
      expect(sent.path).toBe("/v1/messages")
      expect(sent.body).toMatchObject({ model: door.model, system: "Be brief.", max_tokens: 256 })
    } else {
      expect(sent.path).toBe("/v1/responses")
      expect(sent.body).toMatchObject({ model: door.model, instructions: "Be brief.", stream: false })
    }
  })

  it("messages.stream + finalMessage: the SDK's accumulator takes the stream, text equals the deltas", async () => {
    const client = sdk(setup.gw, key)
    const deltas: Array<string> = []
    const stream = client.messages.stream({
      model: door.model,
      max_tokens: 256,
      messages: [{ role: "user", content: "Stream a greeting, please" }]
    })
    stream.on("text", (t) => deltas.push(t))
    const final = await stream.finalMessage()
    expect(final.model).toBe(door.model)
    expect(final.stop_reason).toBe("end_turn")
    expect(deltas.length).toBeGreaterThan(1)
    const text = final.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
    expect(text).toBe(deltas.join(""))
    expect(text).toContain("Stream a greeting")
    expect(final.usage.output_tokens).toBeGreaterThan(0)
    expect(last().body?.["stream"]).toBe(true)
  })

  it("the raw SSE: an event: line on every frame naming data.type, message_start first, message_stop last", async () => {
    const res = await postMessages(setup.gw, key, {
      model: door.model,
      max_tokens: 256,
      stream: true,
      messages: [{ role: "user", content: "Raw frames please" }]
    })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const text = await res.text()
    const frames = sseFrames(text)
    for (const frame of frames) expect(frame.event).toBe(frame.data["type"])
    expect(frames[0]?.event).toBe("message_start")
    expect(frames.at(-1)?.event).toBe("message_stop")
    // Blocks one at a time: each delta and stop names the block last started.
    let open: number | undefined
    let next = 0
    for (const { data } of frames) {
      if (data["type"] === "content_block_start") {
        expect(open).toBeUndefined()
        expect(data["index"]).toBe(next)
        open = next++
      } else if (data["type"] === "content_block_delta") {
        expect(data["index"]).toBe(open)
      } else if (data["type"] === "content_block_stop") {
        expect(data["index"]).toBe(open)
        open = undefined
      }
    }
    expect(next).toBeGreaterThan(0)
    if (door.passthrough) expect(text).toBe(last().sent)
  })
})

describe.each(DOORS)("request-id on every answer, $platform group", (door) => {
  const key = keyFor(door, "main")
  const body = { model: door.model, max_tokens: 64, messages: [{ role: "user", content: "Hi" }] }

  it("a 200 JSON, SSE and count_tokens answer carries request-id, the x-request-id, as the SDK reads it", async () => {
    for (const res of [
      await postMessages(setup.gw, key, body),
      await postMessages(setup.gw, key, { ...body, stream: true }),
      await postMessages(setup.gw, key, { model: door.model, messages: body.messages }, { path: "/v1/messages/count_tokens" })
    ]) {
      expect(res.status).toBe(200)
      await res.arrayBuffer()
      expect(res.headers.get("request-id")).toMatch(/\S{8,}/)
      expect(res.headers.get("request-id")).toBe(res.headers.get("x-request-id"))
    }
    const { data, request_id, response } = await sdk(setup.gw, key).messages.create({
      model: door.model,
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi" }]
    }).withResponse()
    expect(data.type).toBe("message")
    expect(request_id).toBe(response.headers.get("x-request-id"))
  })
})

describe.each(DOORS)("a model the account maps to another name, $platform group", (door) => {
  const key = keyFor(door, "main")
  const { requested, upstream } = door.mapped

  it("JSON: the upstream gets its own name, the client the name it asked for", async () => {
    const message = await sdk(setup.gw, key).messages.create({ model: requested, max_tokens: 64, messages: [{ role: "user", content: "Mapped hello" }] })
    expect(message.model).toBe(requested)
    expect(last().body?.["model"]).toBe(upstream)
  })

  it("stream: message_start names the requested model, in the SDK and on the wire", async () => {
    const final = await sdk(setup.gw, key).messages.stream({ model: requested, max_tokens: 64, messages: [{ role: "user", content: "Mapped stream" }] }).finalMessage()
    expect(final.model).toBe(requested)
    expect(last().body?.["model"]).toBe(upstream)
    const res = await postMessages(setup.gw, key, { model: requested, max_tokens: 64, stream: true, messages: [{ role: "user", content: "Mapped raw" }] })
    const text = await res.text()
    expect(text).not.toContain(upstream)
    const frames = sseFrames(text)
    expect(frames[0]?.data).toMatchObject({ type: "message_start", message: { model: requested } })
    for (const frame of frames) expect(frame.event).toBe(frame.data["type"])
    expect(frames.at(-1)?.event).toBe("message_stop")
    if (door.passthrough) {
      // Only the model differs from what the client sent.
      expect({ ...last().body, model: requested }).toEqual({ model: requested, max_tokens: 64, stream: true, messages: [{ role: "user", content: "Mapped raw" }] })
    }
  })
})

describe("passthrough group: bytes and headers as sent", () => {
  const door = DOORS.find((d) => d.passthrough)!
  const key = keyFor(door, "main")
  const body = JSON.stringify({
    max_tokens: 128,
    // Key order, spacing and an unknown field the gateway must not normalise away.
    messages: [{ role: "user", content: "Byte for byte" }],
    model: door.model,
    "x_unknown_field": { "nested": [1, 2.50, "ü"] }
  }, null, 1)

  it("JSON: the upstream gets the body and anthropic-version/anthropic-beta as sent; the client the upstream's bytes", async () => {
    const res = await postMessages(setup.gw, key, body, {
      path: "/v1/messages?beta=true",
      headers: { "anthropic-version": "2023-06-01", "anthropic-beta": "foo-2025-01-01" }
    })
    expect(res.status).toBe(200)
    const text = await res.text()
    const sent = last()
    expect(sent.path).toBe("/v1/messages")
    expect(sent.raw).toBe(body)
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01")
    expect(sent.headers["anthropic-beta"]).toBe("foo-2025-01-01")
    // The upstream's credential, never the client's key.
    expect(sent.credential).toBe("sk-up-an-main")
    expect(JSON.stringify(sent.headers)).not.toContain(key)
    expect(text).toBe(sent.sent)
  })

  it("the SDK's beta client (?beta=true, betas) reaches the upstream with its headers", async () => {
    const client = sdk(setup.gw, key, { headers: { "anthropic-version": "2023-06-01" } })
    const message = await client.beta.messages.create({
      model: door.model,
      max_tokens: 64,
      betas: ["foo-2025-01-01"],
      messages: [{ role: "user", content: "Beta hello" }]
    })
    expect(message.model).toBe(door.model)
    expect(last().headers["anthropic-beta"]).toBe("foo-2025-01-01")
    expect(last().headers["anthropic-version"]).toBe("2023-06-01")
  })

  it("stream: the client gets the upstream's SSE bytes", async () => {
    const streamed = JSON.stringify({ model: door.model, max_tokens: 128, stream: true, messages: [{ role: "user", content: "Stream bytes" }] })
    const res = await postMessages(setup.gw, key, streamed, { headers: { "anthropic-beta": "foo-2025-01-01" } })
    const text = await res.text()
    expect(last().raw).toBe(streamed)
    expect(last().headers["anthropic-beta"]).toBe("foo-2025-01-01")
    expect(text).toBe(last().sent)
  })
})
