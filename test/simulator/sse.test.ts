import { describe, expect, it } from "@effect/vitest"
import { encodeSseEvent, encodeSseEvents } from "../../src/services/upstream/simulator/index.js"

describe("encodeSseEvents", () => {
  const events = [
    { type: "message_start", message: { id: "msg_1" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "line one\nline two" } }
  ]

  it("writes event lines and one-line data payloads", () => {
    const out = encodeSseEvents(events, { eventLines: true })
    expect(out).toBe(
      `event: message_start\ndata: ${JSON.stringify(events[0])}\n\n` +
        `event: content_block_delta\ndata: ${JSON.stringify(events[1])}\n\n`
    )
    // embedded newlines stay escaped inside the JSON, so every frame is exactly two lines
    for (const frame of out.split("\n\n").filter((f) => f.length > 0)) {
      expect(frame.split("\n")).toHaveLength(2)
    }
  })

  it("can leave the event lines out", () => {
    expect(encodeSseEvents(events, { eventLines: false })).toBe(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(""))
    expect(encodeSseEvent(events[0] ?? {}, { eventLines: false })).toBe(`data: ${JSON.stringify(events[0])}\n\n`)
  })

  it("round-trips through a simple parser", () => {
    const out = encodeSseEvents(events, { eventLines: true })
    const parsed = out
      .split("\n\n")
      .filter((f) => f.length > 0)
      .map((f) => JSON.parse(f.split("\n").find((l) => l.startsWith("data: "))?.slice(6) ?? "null") as unknown)
    expect(parsed).toEqual(events)
  })
})
