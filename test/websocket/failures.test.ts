/**
 * Failures during a Responses WebSocket turn, on both HttpServers and both platforms:
 * - the upstream cut mid-stream: the turn ends with response.failed (never a hang), the connection
 *   stays open and serves the next turn;
 * - the upstream failing before any event (500s on every attempt): an error event with the HTTP
 *   status the same request would have had, then the next turn works;
 * - the client closing mid-turn: the turn holds the key's concurrency slot while it runs (an HTTP
 *   request with concurrency 1 is refused then), gives it back when the client leaves (the same
 *   request then succeeds), the upstream request is closed, and the cut turn is settled once in
 *   /v1/usage (estimated on the passthrough, as a cut HTTP stream is).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call, expectEnvelope, postResponses, sleep, waitFor } from "../http/helpers.js"
import { fakeUpstreamConfig } from "../support/gateway.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { PLATFORMS, SERVERS, startWsGateway, usageTotals, WsClient, type WsGateway } from "./helpers.js"

/** fakeUpstreamConfig with alice's keys limited to one request at a time. */
const oneAtATime = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return { ...base, users: base.users.map((u) => ({ ...u, concurrency: 1 })) }
}

const estimated = async (gw: WsGateway, group: string): Promise<number> => {
  const metrics = await call(gw.url, "/metrics")
  const m = new RegExp(`^modelgate_usage_estimated_total\\{group="${group}"\\} (\\d+)$`, "m").exec(metrics.text)
  return Number(m?.[1] ?? 0)
}

describe.each(SERVERS)("failures during a WebSocket turn (%s server)", (server) => {
  let gw: WsGateway
  beforeAll(async () => {
    // A tokenizer counts what a cut stream is billed for; loaded here so settlement is prompt.
    await import("gpt-tokenizer/encoding/o200k_base")
    gw = await startWsGateway({ server, config: oneAtATime, settings: { slotWaitMillis: 100 } })
  })
  afterAll(() => gw.close())

  for (const { platform, key, model } of PLATFORMS) {
    const group = platform === "openai" ? "oa" : "an"

    it(`${platform}: an upstream cut mid-stream ends the turn with response.failed; the connection serves the next turn`, async () => {
      const client = await WsClient.withKey(gw, key)
      try {
        gw.upstream.setFault({ _tag: "CutAfterEvents", events: 4 })
        let cut
        try {
          cut = await client.turn({ model, input: "a long answer that will be cut, please, with many words" })
        } finally {
          gw.upstream.setFault(undefined)
        }
        expect(cut[0]?.type).toBe("response.created")
        expect(cut.at(-1)?.type).toBe("response.failed")
        expect(checkResponsesStream(cut)).toEqual([])
        expect(client.closeInfo).toBeUndefined()
        const next = await client.turn({ model, input: "and now a whole answer" })
        expect(next.at(-1)?.type).toBe("response.completed")
      } finally {
        await client.close()
      }
    })

    it(`${platform}: an upstream failing before any event is an error event with the status; then the next turn works`, async () => {
      const client = await WsClient.withKey(gw, key)
      try {
        gw.upstream.setFault({ _tag: "Status", status: 500 })
        let failed
        try {
          failed = await client.turn({ model, input: "this one fails" })
        } finally {
          gw.upstream.setFault(undefined)
        }
        // What the same request over HTTP would have answered, as an error event.
        expect(failed).toHaveLength(1)
        expect(failed[0]).toMatchObject({ type: "error", status: 502, error: { type: "upstream_error", code: "upstream_error" } })
        expect(Object.keys(failed[0]?.["error"] as object).sort()).toEqual(["code", "message", "param", "type"])
        expect(client.closeInfo).toBeUndefined()
        const next = await client.turn({ model, input: "this one works" })
        expect(next.at(-1)?.type).toBe("response.completed")
      } finally {
        await client.close()
      }
    })

    for (const how of ["a close frame", "a dropped socket"] as const) {
      it(`${platform}: a client leaving mid-turn (${how}) gives the concurrency slot back and the turn is settled`, async () => {
        const usageBefore = await usageTotals(gw.url, key)
        const estimatedBefore = await estimated(gw, group)
        const client = await WsClient.withKey(gw, key)
        gw.upstream.setFault({ _tag: "SlowEvents", delayMs: 150 })
        try {
          client.send({ type: "response.create", model, input: "a slow answer with a great many words in it, one at a time, please" })
          // Wait until some output reached the client.
          for (;;) {
            const frame = await client.next(5_000)
            if (frame === undefined) throw new Error("no frame")
            if (frame.json?.type === "response.output_text.delta") break
          }
          // The turn holds the slot: a request of the same user now waits 100 ms and is refused.
          gw.upstream.setFault(undefined)
          const blocked = await postResponses(gw.url, key, { model, input: "me too" })
          expectEnvelope(blocked, { status: 429, type: "rate_limit_error", code: "concurrency_limit_exceeded" })
        } finally {
          gw.upstream.setFault(undefined)
        }
        const inFlight = gw.upstream.inFlight()
        expect(inFlight).toBe(1)
        if (how === "a close frame") await client.close(1000)
        else client.socket.terminate() // the client goes away without a close handshake
        await waitFor(() => gw.upstream.inFlight() === 0)
        // The slot is free again: the same request is served.
        const after = await postResponses(gw.url, key, { model, input: "me too" })
        expect(after.status).toBe(200)
        // The cut turn and that request are the only usage: the cut one settled once, estimated.
        await waitFor(async () => (await usageTotals(gw.url, key)).requests === usageBefore.requests + 2, 5_000)
        await sleep(100)
        const usage = await usageTotals(gw.url, key)
        expect(usage.requests).toBe(usageBefore.requests + 2)
        expect(usage.input_tokens).toBeGreaterThan(usageBefore.input_tokens)
        expect(usage.cost).toBeGreaterThan(usageBefore.cost)
        // The passthrough had no usage event yet: estimated, as a cut HTTP stream is. (Anthropic reports
        // the input in message_start, so a cut translated stream is settled from that.)
        expect(await estimated(gw, group)).toBe(estimatedBefore + (platform === "openai" ? 1 : 0))
      })
    }
  }
})
