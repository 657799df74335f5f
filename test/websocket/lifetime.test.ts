/**
 * A Responses WebSocket connection's lifetime, on both HttpServers:
 * - the age limit: websocket_connection_limit_reached (error event, status 400) then close 1000,
 *   after the running turn when one runs;
 * - keep-alive frames (`{"type":"keepalive"}`) while a turn is silent (between slow upstream
 *   events and while the upstream has not answered yet), none once the turn ended;
 * - one turn at a time: queued creates run in order after the running one; past 8 waiting, an
 *   error event 429 too_many_pending_messages;
 * - shutdown: idle connections close with 1001 at once, a running turn finishes first.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { defaultSchedulingSettings } from "../../src/config/scheduling.js"
import { Lifecycle } from "../../src/services/lifecycle/Lifecycle.js"
import { sleep } from "../http/helpers.js"
import { OA_KEY, responseOf, SERVERS, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

const model = "gpt-5.4"

describe.each(SERVERS)("connection lifetime (%s server)", (server) => {
  describe("the age limit", () => {
    let gw: WsGateway
    beforeAll(async () => {
      gw = await startWsGateway({ server, settings: { websocketMaxAgeMillis: 600 } })
    })
    afterAll(() => gw.close())

    it("an idle connection gets websocket_connection_limit_reached (status 400), then close 1000", async () => {
      const opened = Date.now()
      const client = await WsClient.withKey(gw, OA_KEY)
      const ok = await client.turn({ model, input: "hi" })
      expect(ok.at(-1)?.type).toBe("response.completed")
      const frame = await client.next(3_000)
      expect(frame?.json).toMatchObject({
        type: "error",
        status: 400,
        error: { type: "invalid_request_error", code: "websocket_connection_limit_reached", param: null }
      })
      const closed = await client.closed
      expect(closed.code).toBe(1000)
      expect(Date.now() - opened).toBeGreaterThanOrEqual(550)
      expect(Date.now() - opened).toBeLessThan(3_000)
    })

    it("a turn running at the limit finishes first", async () => {
      const opened = Date.now()
      const client = await WsClient.withKey(gw, OA_KEY)
      gw.upstream.setFaults([{ _tag: "SlowEvents", delayMs: 60 }])
      client.send({ type: "response.create", model, input: "a slow answer that runs past the connection's age, many words" })
      const { events } = await client.readTurn()
      expect(events.at(-1)?.type).toBe("response.completed")
      // It ran past the limit, and was not cut for it.
      expect((client.received.at(-1)?.at ?? 0) - opened).toBeGreaterThan(700)
      const frame = await client.next(3_000)
      expect(frame?.json).toMatchObject({ type: "error", status: 400, error: { code: "websocket_connection_limit_reached" } })
      expect((await client.closed).code).toBe(1000)
    })
  })

  describe("keep-alive frames", () => {
    let gw: WsGateway
    beforeAll(async () => {
      gw = await startWsGateway({ server, settings: { scheduling: { ...defaultSchedulingSettings, keepAliveMillis: 50 } } })
    })
    afterAll(() => gw.close())

    it("arrive while the upstream is slow between events, and stop when the turn ends", async () => {
      const client = await WsClient.withKey(gw, OA_KEY)
      try {
        gw.upstream.setFaults([{ _tag: "SlowEvents", delayMs: 150 }])
        client.send({ type: "response.create", model, input: "slowly, please: one two three" })
        const { events, keepAlives } = await client.readTurn()
        expect(events.at(-1)?.type).toBe("response.completed")
        expect(keepAlives).toBeGreaterThanOrEqual(3)
        const keepAliveFrames = client.received.filter((f) => f.json?.type === "keepalive")
        expect(keepAliveFrames.every((f) => f.text === "{\"type\":\"keepalive\"}")).toBe(true)
        // No silence much longer than the keep-alive interval inside the turn.
        const times = client.received.map((f) => f.at)
        const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t))
        expect(Math.max(...gaps)).toBeLessThan(200)
        // Idle between turns: nothing.
        expect(await client.quiet(250)).toBe(true)
      } finally {
        await client.close()
      }
    })

    it("arrive while the upstream has not answered yet", async () => {
      const client = await WsClient.withKey(gw, OA_KEY)
      try {
        gw.upstream.setFaults([{ _tag: "HangBeforeHeaders", ms: 700 }])
        const sent = Date.now()
        client.send({ type: "response.create", model, input: "think first" })
        const { events, keepAlives } = await client.readTurn()
        expect(events.at(-1)?.type).toBe("response.completed")
        // The 700 ms before the upstream's headers were not silent.
        expect(keepAlives).toBeGreaterThanOrEqual(5)
        const times = [sent, ...client.received.map((f) => f.at)]
        const gaps = times.slice(1).map((t, i) => t - (times[i] ?? t))
        expect(Math.max(...gaps)).toBeLessThan(200)
      } finally {
        await client.close()
      }
    })
  })

  describe("one turn at a time", () => {
    let gw: WsGateway
    beforeAll(async () => {
      gw = await startWsGateway({ server })
    })
    afterAll(() => gw.close())

    it("creates sent while a turn runs are answered in order, each whole", async () => {
      const client = await WsClient.withKey(gw, OA_KEY)
      try {
        gw.upstream.setFaults([{ _tag: "SlowEvents", delayMs: 30 }])
        const words = ["alpha", "bravo", "charlie", "delta"]
        for (const w of words) client.send({ type: "response.create", model, input: `say ${w}` })
        const turns = []
        for (const _ of words) turns.push((await client.readTurn()).events)
        for (const [i, events] of turns.entries()) {
          expect(events[0]?.type).toBe("response.created")
          expect(events.at(-1)?.type).toBe("response.completed")
          expect(events.map((e) => e["sequence_number"])).toEqual(events.map((_, j) => j))
          expect(JSON.stringify(responseOf(events.at(-1)).output)).toContain(words[i])
        }
      } finally {
        await client.close()
      }
    })

    it("past 8 waiting messages: error event 429 too_many_pending_messages in its turn, never inside another turn's frames", async () => {
      const client = await WsClient.withKey(gw, OA_KEY)
      try {
        gw.upstream.setFaults([{ _tag: "SlowEvents", delayMs: 100 }])
        client.send({ type: "response.create", model, input: "the running one" })
        for (;;) {
          const f = await client.next()
          if (f === undefined) throw new Error("no frame")
          if (f.json?.type === "response.created") break
        }
        for (let i = 0; i < 9; i++) client.send({ type: "response.create", model, input: `queued ${i}` })
        await sleep(100)
        // Nothing interrupts the running turn's frames.
        expect(client.received.filter((f) => f.json?.type === "error")).toHaveLength(0)
        // The running turn and the 8 queued ones are all answered, then the refusal.
        await waitForCount(client, "response.completed", 9)
        await waitForCount(client, "error", 1)
        const terminals = client.received.filter((f) => f.json?.type === "response.completed" || f.json?.type === "error")
        expect(terminals.map((f) => f.json?.type)).toEqual([...Array(9).fill("response.completed"), "error"])
        expect(terminals.at(-1)?.json).toMatchObject({
          type: "error",
          status: 429,
          error: { type: "rate_limit_error", code: "too_many_pending_messages" }
        })
      } finally {
        await client.close()
      }
    })
  })

  describe("shutdown", () => {
    let gw: WsGateway
    beforeAll(async () => {
      gw = await startWsGateway({ server })
    })
    afterAll(() => gw.close())

    it("closes idle connections with 1001 and lets a running turn finish first", async () => {
      const idle = await WsClient.withKey(gw, OA_KEY)
      const warm = await idle.turn({ model, input: "before the shutdown" })
      expect(warm.at(-1)?.type).toBe("response.completed")
      const busy = await WsClient.withKey(gw, OA_KEY)
      gw.upstream.setFaults([{ _tag: "SlowEvents", delayMs: 60 }])
      busy.send({ type: "response.create", model, input: "a turn running through the shutdown, with some words" })
      const first = await busy.next()
      expect(first?.json?.type).toBe("response.created")

      const began = Date.now()
      await gw.runtime.runPromise(Effect.flatMap(Lifecycle, (l) => l.beginShutdown(5)))
      const idleClosed = await idle.closed
      expect(idleClosed.code).toBe(1001)
      expect(Date.now() - began).toBeLessThan(1_000)

      const { events } = await busy.readTurn()
      expect(events.at(-1)?.type).toBe("response.completed")
      expect(busy.closeInfo === undefined || (busy.closeInfo.at >= (busy.received.at(-1)?.at ?? 0))).toBe(true)
      expect((await busy.closed).code).toBe(1001)
    })
  })
})

const waitForCount = async (client: WsClient, type: string, count: number, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (client.received.filter((f) => f.json?.type === type).length < count) {
    if (Date.now() > deadline) {
      throw new Error(`${type}: ${client.received.filter((f) => f.json?.type === type).length} of ${count}`)
    }
    await sleep(20)
  }
}
