/**
 * A turn the client closes on right after its `response.completed` (issue 26, item 9; Codex does so
 * when a session ends) was answered in full: its access-log line says 200 ok, not 499
 * client_closed_request, and its usage is what the completed event reported. The upstream here
 * keeps its stream open after the terminal event, as upstreams may, so the client's close always
 * lands while the turn is still reading it.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import type { ServerResponse } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { waitFor } from "../http/helpers.js"
import { listenLocal } from "../support/localServer.js"
import { OA_KEY, startWsGateway, usageTotals, WsClient, type WsGateway } from "./helpers.js"

const model = "gpt-5.4"

/** An OpenAI Responses upstream whose streams complete and then stay open until the caller leaves. */
const startLingeringUpstream = async () => {
  const open = new Set<ServerResponse>()
  const server = await listenLocal((req, res) => {
    req.resume()
    req.on("end", () => {
      const id = `resp_linger${Date.now()}`
      const response = (status: string, usage: unknown) =>
        responseObject({ id, model, createdAt: Math.floor(Date.now() / 1000), status, output: status === "completed" ? [message] : [], usage })
      const message = { id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done", annotations: [] }] }
      const events: ReadonlyArray<Record<string, unknown>> = [
        { type: "response.created", sequence_number: 0, response: response("in_progress", null) },
        { type: "response.output_item.done", sequence_number: 1, output_index: 0, item: message },
        {
          type: "response.completed",
          sequence_number: 2,
          response: response("completed", {
            input_tokens: 7,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 5,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 12
          })
        }
      ]
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const event of events) res.write(`event: ${String(event["type"])}\ndata: ${JSON.stringify(event)}\n\n`)
      // No end: the stream lingers until the gateway lets it go.
      open.add(res)
      res.on("close", () => open.delete(res))
    })
  }, "lingering upstream")
  return { url: server.url, lingering: () => open.size, close: server.close }
}

describe("a client that closes right after response.completed", () => {
  const logged: Array<AccessEntry> = []
  const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
  let upstream: Awaited<ReturnType<typeof startLingeringUpstream>>
  let gw: WsGateway
  beforeAll(async () => {
    upstream = await startLingeringUpstream()
    gw = await startWsGateway({
      services: { accessLog },
      config: () => ({
        groups: [{ name: "oa", platform: "openai", models: [model] }],
        users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
        keys: [{ key: OA_KEY, user: "alice", group: "oa", name: "oa-key" }],
        accounts: [{ name: "lingering", platform: "openai", base_url: `${upstream.url}/v1`, api_key_env: "FAKE_OPENAI_KEY", groups: ["oa"] }]
      })
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it("its turn is logged 200 ok and billed as completed", async () => {
    const before = await usageTotals(gw.url, OA_KEY)
    const from = logged.length
    const client = await WsClient.withKey(gw, OA_KEY)
    const events = await client.turn({ model, input: "hi" })
    expect(events.at(-1)?.type).toBe("response.completed")
    // The turn is still reading the upstream's open stream when the client leaves.
    expect(upstream.lingering()).toBe(1)
    await client.close(1000)
    await waitFor(() => logged.slice(from).some((e) => e.method === "POST"), 5_000)
    const turn = logged.slice(from).filter((e) => e.method === "POST")
    expect(turn.map((e) => [e.status, e.code])).toEqual([[200, "ok"]])
    await waitFor(async () => (await usageTotals(gw.url, OA_KEY)).requests === before.requests + 1, 5_000)
    const after = await usageTotals(gw.url, OA_KEY)
    expect(after.input_tokens - before.input_tokens).toBe(7)
    expect(after.output_tokens - before.output_tokens).toBe(5)
  })
})
