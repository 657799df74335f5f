/**
 * Graceful shutdown (DESIGN.md "Operations"): streams may run until the drain deadline, then end
 * with a `response.failed` (code server_shutting_down) instead of a cut; usage is still settled.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Lifecycle } from "../../src/services/lifecycle/Lifecycle.js"
import type { FakeUpstream } from "../support/fakeUpstream.js"
import { startWithFakeUpstream, type TestGateway } from "../support/gateway.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { call, readEvents, waitFor } from "./helpers.js"

const KEY = "sk-test-openai-0001"

describe("graceful shutdown", () => {
  let upstream: FakeUpstream
  let gw: TestGateway
  let close: () => Promise<void>
  beforeAll(async () => {
    // A stream cut before its usage is billed by counting tokens; the tokenizer loads on first use
    // (about 0.25 s): loaded here, so settlements land as soon as in a gateway that has run a while.
    await import("gpt-tokenizer/encoding/o200k_base")
    ;({ upstream, gw, close } = await startWithFakeUpstream())
  })
  afterAll(() => close())

  it("a running stream ends with response.failed server_shutting_down at the drain deadline", async () => {
    upstream.setFault({ _tag: "SlowEvents", delayMs: 60 })
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-5.4",
        input: "a long answer please, with many many words so that the stream runs for a good while",
        stream: true
      })
    })
    expect(res.status).toBe(200)
    // Shutdown begins once the client has some of the answer (its first delta), not at a fixed time
    // before it: a delta due within the drain window may come after it on a loaded machine.
    let shutdownAt = 0
    const { events, error } = await readEvents(res, (e) => {
      if (e["type"] === "response.output_text.delta" && shutdownAt === 0) {
        shutdownAt = Date.now()
        void gw.runtime.runPromise(Lifecycle.use((l) => l.beginShutdown(0.2)))
      }
    })
    const endedAfter = Date.now() - shutdownAt
    expect(error).toBeUndefined()
    const last = events.at(-1) as { type: string; response: { status: string; error: { code: string; message: string } } }
    expect(last.type).toBe("response.failed")
    expect(last.response.status).toBe("failed")
    expect(last.response.error.code).toBe("server_shutting_down")
    expect(checkResponsesStream(events)).toEqual([])
    // Not cut at once (the drain lets it run ~200 ms), and not left to run to its natural end.
    expect(endedAfter).toBeGreaterThanOrEqual(150)
    expect(endedAfter).toBeLessThan(1_500)
    expect(events.some((e) => e["type"] === "response.output_text.delta")).toBe(true)
    // The upstream request was closed and the cut-short stream was billed.
    await waitFor(() => upstream.inFlight() === 0)
    const usage = await call(gw.url, "/v1/usage", { key: KEY })
    expect((usage.json as { usage: { total: { requests: number } } }).usage.total.requests).toBe(1)
    upstream.setFault(undefined)
  })
})

describe("shutdown past the drain deadline", () => {
  it("cuts a request still waiting on its upstream, so shutdown takes DRAIN_SECONDS and a second, not longer", async () => {
    const { upstream, gw, close } = await startWithFakeUpstream()
    try {
      // The upstream would take 8 s to answer; the drain deadline is 0.2 s away.
      upstream.setFault({ _tag: "HangBeforeHeaders", ms: 8_000 })
      const answer = fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-5.4", input: "a question asked just before a restart" })
      }).then((r) => r.status, () => "cut")
      await waitFor(() => upstream.inFlight() === 1)
      const started = Date.now()
      await gw.runtime.runPromise(Lifecycle.use((l) => l.beginShutdown(0.2)))
      await gw.close()
      const took = Date.now() - started
      expect(await answer).toBe("cut")
      expect(took).toBeGreaterThanOrEqual(1_000)
      expect(took).toBeLessThan(3_000)
      await waitFor(() => upstream.inFlight() === 0)
    } finally {
      await close()
    }
  })
})
