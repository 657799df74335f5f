/**
 * The Responses WebSocket transport driven by the openai SDK's own WebSocket client
 * (`openai/resources/responses/ws`), over a real socket, against the fake upstreams of both
 * platforms: a turn, a warm-up, and a continuation by previous_response_id sending only new items.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { ResponsesWS } from "openai/resources/responses/ws"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"

type ServerEvent = Record<string, unknown> & { type: string }

/** Sends one create and collects its events up to the terminal one. */
const turn = async (ws: ResponsesWS, body: Record<string, unknown>): Promise<Array<ServerEvent>> => {
  const events: Array<ServerEvent> = []
  const done = new Promise<void>((resolve, reject) => {
    const onEvent = (event: unknown) => {
      const e = event as ServerEvent
      events.push(e)
      if (["response.completed", "response.failed", "response.incomplete", "error"].includes(e.type)) {
        ws.off("event", onEvent)
        resolve()
      }
    }
    ws.on("event", onEvent)
    setTimeout(() => reject(new Error(`no terminal event; got ${events.map((e) => e.type).join(", ")}`)), 10_000)
  })
  ws.send({ type: "response.create", ...body } as Parameters<ResponsesWS["send"]>[0])
  await done
  return events
}

describe("Responses WebSocket with the openai SDK client", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gw = await startGateway({ config: fakeUpstreamConfig(upstream.url), env: fakeUpstreamEnv })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  for (const [platform, key, model] of [
    ["openai", "sk-test-openai-0001", "gpt-5.4"],
    ["anthropic", "sk-test-anthropic-0001", "claude-sonnet-4-5"]
  ] as const) {
    it(`serves a warm-up and two chained turns (${platform})`, async () => {
      const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` })
      const ws = new ResponsesWS(client)
      ws.on("error", () => undefined) // error events are asserted from the event stream
      try {
        const warm = await turn(ws, { model, input: [{ role: "user", content: "hello" }], generate: false })
        expect(warm.map((e) => e.type)).toEqual(["response.created", "response.completed"])
        const warmId = (warm[1]?.["response"] as { id: string }).id

        const first = await turn(ws, { model, input: [], previous_response_id: warmId })
        expect(first.at(-1)?.type).toBe("response.completed")
        const firstId = (first.at(-1)?.["response"] as { id: string }).id
        const seqs = first.map((e) => e["sequence_number"])
        expect(seqs).toEqual(seqs.map((_, i) => i))

        const second = await turn(ws, {
          model,
          input: [{ role: "user", content: "and again" }],
          previous_response_id: firstId
        })
        expect(second.at(-1)?.type).toBe("response.completed")
        // The upstream heard the whole conversation: the first message, the answer, the new one.
        const last = upstream.requests.at(-1)
        const sent = JSON.stringify(last?.body)
        expect(sent).toContain("hello")
        expect(sent).toContain("and again")
        expect(sent).not.toContain("previous_response_id")

        const unknown = await turn(ws, { model, input: [], previous_response_id: "resp_nope" })
        expect(unknown.at(-1)).toMatchObject({ type: "error", status: 400, error: { code: "previous_response_not_found" } })
      } finally {
        ws.close()
      }
    })
  }
})
