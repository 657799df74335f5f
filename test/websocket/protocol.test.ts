/**
 * The Responses WebSocket messages by the protocol (../shared/reference/responses-websocket.md §2-5),
 * frame by frame with the `ws` client, on both HttpServers and both upstream platforms:
 * - a warm-up (`generate: false`) is exactly response.created + response.completed, reaches no
 *   upstream, bills nothing, and its id is chainable (the next turn sends its input upstream);
 * - an unknown previous_response_id is an error event 400 previous_response_not_found, the
 *   connection stays usable, and a failed turn drops the chain it continued;
 * - refused messages (unknown type, response.append, stream_id, background, invalid JSON, binary)
 *   are error events with status 400 and the connection stays usable; response.processed is ignored.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { PLATFORMS, responseOf, SERVERS, startWsGateway, usageTotals, WsClient, type WsGateway } from "./helpers.js"

const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] })

describe.each(SERVERS)("Responses WebSocket messages (%s server)", (server) => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ server })
  })
  afterAll(() => gw.close())

  for (const { platform, key, model } of PLATFORMS) {
    describe(`${platform} group`, () => {
      it("a warm-up is exactly created + completed, with no upstream request and no usage, and is chainable", async () => {
        const client = await WsClient.withKey(gw, key)
        try {
          const usageBefore = await usageTotals(gw.url, key)
          const requestsBefore = gw.upstream.requests.length
          client.send({
            type: "response.create",
            model,
            instructions: "Be brief.",
            input: [user("warm words: saffron")],
            tools: [],
            generate: false
          })
          const { events } = await client.readTurn()
          expect(events.map((e) => e.type)).toEqual(["response.created", "response.completed"])
          expect(events.map((e) => e["sequence_number"])).toEqual([0, 1])
          const created = responseOf(events[0])
          const completed = responseOf(events[1])
          expect(created.id).toMatch(/^resp_/)
          expect(completed).toMatchObject({ id: created.id, status: "completed", output: [], model })
          expect(completed["usage"]).toMatchObject({ input_tokens: 0, output_tokens: 0, total_tokens: 0 })
          // Nothing else follows, nothing went upstream, nothing was billed.
          expect(await client.quiet(150)).toBe(true)
          expect(gw.upstream.requests.length).toBe(requestsBefore)
          expect(await usageTotals(gw.url, key)).toEqual(usageBefore)

          // Chainable: the next turn names it with no new items; the upstream hears the warm-up's input.
          const first = await client.turn({ model, input: [], previous_response_id: created.id })
          expect(first.at(-1)?.type).toBe("response.completed")
          expect(checkResponsesStream(first)).toEqual([])
          expect(gw.upstream.requests.length).toBe(requestsBefore + 1)
          expect(JSON.stringify(gw.upstream.requests.at(-1)?.body)).toContain("warm words: saffron")
          const after = await usageTotals(gw.url, key)
          expect(after.requests).toBe(usageBefore.requests + 1)
        } finally {
          await client.close()
        }
      })

      it("an unknown previous_response_id is an error event 400; the connection stays usable", async () => {
        const client = await WsClient.withKey(gw, key)
        try {
          const requestsBefore = gw.upstream.requests.length
          const unknown = await client.turn({ model, input: [user("hi")], previous_response_id: "resp_unknown123" })
          expect(unknown).toEqual([{
            type: "error",
            status: 400,
            error: {
              type: "invalid_request_error",
              code: "previous_response_not_found",
              message: "Previous response with id 'resp_unknown123' not found.",
              param: "previous_response_id"
            }
          }])
          expect(gw.upstream.requests.length).toBe(requestsBefore)
          const ok = await client.turn({ model, input: [user("still here?")] })
          expect(ok.at(-1)?.type).toBe("response.completed")
        } finally {
          await client.close()
        }
      })

      it("only the latest response is chainable; a failed turn drops the chain it continued", async () => {
        const client = await WsClient.withKey(gw, key)
        try {
          const a = await client.turn({ model, input: [user("first")] })
          const aId = responseOf(a.at(-1)).id
          const b = await client.turn({ model, input: [user("second")], previous_response_id: aId })
          const bId = responseOf(b.at(-1)).id
          expect(b.at(-1)?.type).toBe("response.completed")
          // A is no longer the latest.
          const stale = await client.turn({ model, input: [user("x")], previous_response_id: aId })
          expect(stale.at(-1)).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
          // ...and that failed turn dropped B's chain too (a failed turn evicts what it continued, §4.1).
          const afterFailure = await client.turn({ model, input: [user("y")], previous_response_id: bId })
          expect(afterFailure.at(-1)).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })

          // A turn failing upstream drops the chain as well.
          const c = await client.turn({ model, input: [user("third")] })
          const cId = responseOf(c.at(-1)).id
          gw.upstream.setFault({ _tag: "Status", status: 400 })
          let failed
          try {
            failed = await client.turn({ model, input: [user("fourth")], previous_response_id: cId })
          } finally {
            gw.upstream.setFault(undefined)
          }
          expect(failed.at(-1)).toMatchObject({ type: "error", status: 400 })
          const afterUpstreamFailure = await client.turn({ model, input: [user("fifth")], previous_response_id: cId })
          expect(afterUpstreamFailure.at(-1)).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
          // A full create starts a new chain.
          const fresh = await client.turn({ model, input: [user("again from the start")] })
          expect(fresh.at(-1)?.type).toBe("response.completed")
        } finally {
          await client.close()
        }
      })
    })
  }

  describe("refused and ignored messages", () => {
    const { key, model } = PLATFORMS[0]
    let client: WsClient
    beforeAll(async () => {
      client = await WsClient.withKey(gw, key)
    })
    afterAll(() => client.close())

    const refusedWith = async (message: unknown, code: string, param: string | null) => {
      client.send(message)
      const frame = await client.next()
      expect(frame?.binary).toBe(false)
      expect(frame?.json).toMatchObject({ type: "error", status: 400, error: { type: "invalid_request_error", code, param } })
      expect(typeof (frame?.json?.["error"] as { message?: unknown }).message).toBe("string")
      // Usable afterwards.
      const ok = await client.turn({ model, input: "still usable?" })
      expect(ok.at(-1)?.type).toBe("response.completed")
    }

    it("an unknown message type: error event 400 unsupported_message_type", () =>
      refusedWith({ type: "response.frobnicate", model }, "unsupported_message_type", "type"))

    it("response.append (v1): error event 400 unsupported_message_type", () =>
      refusedWith({ type: "response.append", input: [user("more")] }, "unsupported_message_type", "type"))

    it("invalid JSON: error event 400 invalid_json", () => refusedWith("{not json", "invalid_json", null))

    it("a JSON value that is no object: error event 400 invalid_json", () => refusedWith("[1,2]", "invalid_json", null))

    it("stream_id lanes: error event 400 invalid_stream_id", () =>
      refusedWith({ type: "response.create", model, input: "hi", stream_id: "lane-1" }, "invalid_stream_id", "stream_id"))

    it("background: error event 400 background_not_supported (its work would be done, and billed, after the turn)", () =>
      refusedWith({ type: "response.create", model, input: "hi", background: true }, "background_not_supported", "background"))

    it("a binary frame: error event 400 (as a text frame)", () => refusedWith(Buffer.from("{}"), "invalid_message", null))

    it("response.processed is ignored: no frame back", async () => {
      const requestsBefore = gw.upstream.requests.length
      client.send({ type: "response.processed", response_id: "resp_whatever" })
      expect(await client.quiet(200)).toBe(true)
      expect(gw.upstream.requests.length).toBe(requestsBefore)
    })

    it("a create without type is a create", async () => {
      client.send({ model, input: "no type field" })
      const { events } = await client.readTurn()
      expect(events.at(-1)?.type).toBe("response.completed")
    })

    it("frames are text, one event each, in the SSE order with sequence numbers 0..n", async () => {
      const from = client.received.length
      const events = await client.turn({ model, input: "count the frames" })
      const frames = client.received.slice(from)
      expect(frames.every((f) => !f.binary && f.json !== undefined)).toBe(true)
      expect(frames.length).toBe(events.length)
      expect(events.map((e) => e["sequence_number"])).toEqual(events.map((_, i) => i))
      expect(checkResponsesStream(events)).toEqual([])
      expect(events.map((e) => e.type)).toContain("response.output_text.delta")
    })
  })
})

describe.each(SERVERS)("message size (%s server)", (server) => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ server, settings: { maxBodyBytes: 32 * 1024 } })
  })
  afterAll(() => gw.close())

  it("a message under MAX_BODY_BYTES is served; one over it never reaches the upstream", async () => {
    const { key, model } = PLATFORMS[0]
    const client = await WsClient.withKey(gw, key)
    try {
      const ok = await client.turn({ model, input: "x".repeat(24 * 1024) })
      expect(ok.at(-1)?.type).toBe("response.completed")
      const requestsBefore = gw.upstream.requests.length
      client.send({ type: "response.create", model, input: "x".repeat(40 * 1024) })
      const frame = await client.next(3_000)
      // The server's WebSocket (ws, maxPayload = MAX_BODY_BYTES) refuses it as a frame: close 1009
      // (message too big), as the lean server of Effect 3 did.
      expect(frame).toBeUndefined()
      expect(client.closeInfo?.code).toBe(1009)
      expect(gw.upstream.requests.length).toBe(requestsBefore)
    } finally {
      await client.close()
    }
  })
})
