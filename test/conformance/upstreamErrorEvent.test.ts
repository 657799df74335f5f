/**
 * An OpenAI upstream's own `error` stream event (code, message and param at the top of the event)
 * is relayed on the Responses doors in the Open Responses shape (ErrorStreamingEvent: an `error`
 * object with type, code, message and param), with the upstream's code and message, over SSE and
 * WebSocket; the stream then ends in a conforming `response.failed`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { responseObject } from "../../src/domain/responseObject.js"
import { readEvents } from "../http/helpers.js"
import { type LocalServer, listenLocal } from "../support/localServer.js"
import { eventIssues } from "../support/openResponses.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { OA_KEY, startWsGateway, WsClient, type WsGateway } from "../websocket/helpers.js"

const model = "gpt-5.4"

/** An upstream whose stream is created, then says `error` as OpenAI does (flat), and ends. */
const startErroringUpstream = (): Promise<LocalServer> =>
  listenLocal((req, res) => {
    req.resume()
    req.on("end", () => {
      const created = {
        type: "response.created",
        sequence_number: 0,
        response: responseObject({ id: "resp_erroring", model, createdAt: 1_700_000_000, status: "in_progress" })
      }
      const error = { type: "error", sequence_number: 1, code: "rate_limit_exceeded", message: "Slow down: too many tokens per minute", param: null }
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const event of [created, error]) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
      res.end()
    })
  }, "erroring upstream")

describe("an upstream's own error event, relayed", () => {
  let upstream: LocalServer
  let gw: WsGateway
  beforeAll(async () => {
    upstream = await startErroringUpstream()
    gw = await startWsGateway({
      config: () => ({
        groups: [{ name: "oa", platform: "openai", models: [model] }],
        users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
        keys: [{ key: OA_KEY, user: "alice", group: "oa", name: "oa-key" }],
        accounts: [{ name: "erroring", platform: "openai", base_url: `${upstream.url}/v1`, api_key_env: "FAKE_OPENAI_KEY", groups: ["oa"] }]
      })
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  const expectSpecError = (events: ReadonlyArray<Record<string, unknown>>, transport: "sse" | "websocket") => {
    const error = events.find((e) => e["type"] === "error")
    expect(error).toMatchObject({
      type: "error",
      sequence_number: 1,
      error: { type: "rate_limit_error", code: "rate_limit_exceeded", message: "Slow down: too many tokens per minute", param: null }
    })
    expect(eventIssues(error, transport)).toEqual([])
  }

  it("over SSE: the spec's shape, the upstream's code and message, then response.failed", async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${OA_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hi", stream: true })
    })
    const { events } = await readEvents(res)
    expectSpecError(events, "sse")
    expect(events.at(-1)?.["type"]).toBe("response.failed")
    expect(checkResponsesStream(events)).toEqual([])
  })

  it("over WebSocket: the same event", async () => {
    const ws = await WsClient.withKey(gw, OA_KEY)
    const events = await ws.turn({ model, input: "hi" })
    expectSpecError(events, "websocket")
    await ws.close()
  })
})
