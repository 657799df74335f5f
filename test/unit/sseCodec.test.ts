/** src/domain/sse.ts: frames come out whole however the bytes were split, with \n or \r\n line ends. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import fc from "fast-check"
import { encodeEvent, isEventStream, keepAliveComment, SseDecoder, sseFrames } from "../../src/domain/sse.js"

const encoder = new TextEncoder()

/** Cuts `bytes` at the given (sorted, deduplicated) offsets. */
const cut = (bytes: Uint8Array, offsets: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const p of points) {
    out.push(bytes.slice(from, p))
    from = p
  }
  out.push(bytes.slice(from))
  return out
}

const decodeAll = (chunks: ReadonlyArray<Uint8Array>) => {
  const decoder = new SseDecoder()
  return [...chunks.flatMap((c) => decoder.push(c)), ...decoder.flush()]
}

const events = [
  { type: "response.created", sequence_number: 0, response: { id: "resp_1", model: "m", note: "ünïcödé ✓ 日本語" } },
  { type: "response.output_text.delta", sequence_number: 1, delta: "line one\nline two", item_id: "msg_1" },
  { type: "response.completed", sequence_number: 2, response: { id: "resp_1", text: "emoji 🎉 and \"quotes\"" } }
]

const wire = events.map(encodeEvent).join("") + keepAliveComment

describe("SseDecoder", () => {
  it("decodes encoded events whole, with event name, data and original text", () => {
    const frames = decodeAll([encoder.encode(wire)])
    expect(frames.map((f) => f.event)).toEqual(["response.created", "response.output_text.delta", "response.completed", undefined])
    expect(frames.slice(0, 3).map((f) => JSON.parse(f.data) as unknown)).toEqual(events)
    expect(frames.slice(0, 3).map((f) => f.text).join("")).toBe(events.map(encodeEvent).join(""))
    expect(frames[3]?.data).toBe("")
  })

  it("gives the same frames for any split of the bytes (multi-byte characters included)", () => {
    const bytes = encoder.encode(wire)
    const whole = decodeAll([bytes])
    fc.assert(
      fc.property(fc.array(fc.nat({ max: bytes.length }), { maxLength: 40 }), (offsets) => {
        expect(decodeAll(cut(bytes, offsets))).toEqual(whole)
      }),
      { numRuns: 300 }
    )
  })

  it("treats \\r\\n and \\r line ends like \\n, even when \\r and \\n arrive in different chunks", () => {
    const crlf = encoder.encode(wire.replace(/\n/g, "\r\n"))
    const lf = decodeAll([encoder.encode(wire)]).map((f) => ({ event: f.event, data: f.data }))
    fc.assert(
      fc.property(fc.array(fc.nat({ max: crlf.length }), { maxLength: 40 }), (offsets) => {
        expect(decodeAll(cut(crlf, offsets)).map((f) => ({ event: f.event, data: f.data }))).toEqual(lf)
      }),
      { numRuns: 300 }
    )
    const cr = decodeAll([encoder.encode("event: a\rdata: {\"x\":1}\r\r")])
    expect(cr.map((f) => [f.event, f.data])).toEqual([["a", "{\"x\":1}"]])
  })

  it("joins multi-line data with \\n and takes the value after one optional space", () => {
    const [frame] = decodeAll([encoder.encode("event:x\ndata: a\ndata:b\ndata:  c\nid: 7\n\n")])
    expect(frame?.event).toBe("x")
    expect(frame?.data).toBe("a\nb\n c")
  })

  it("holds a partial frame until its blank line, and flushes a last frame without one", () => {
    const decoder = new SseDecoder()
    expect(decoder.push(encoder.encode("event: a\ndata: {\"n\":1}\n"))).toEqual([])
    expect(decoder.push(encoder.encode("\n")).map((f) => f.data)).toEqual(["{\"n\":1}"])
    expect(decoder.push(encoder.encode("data: {\"n\":2}"))).toEqual([])
    expect(decoder.flush().map((f) => f.data)).toEqual(["{\"n\":2}"])
    expect(decoder.flush()).toEqual([])
  })

  it("drops a byte order mark at the start of the stream only, even split across chunks", () => {
    const bytes = encoder.encode("\uFEFFdata: a\n\ndata: \uFEFFb\n\n")
    expect(decodeAll([bytes]).map((f) => f.data)).toEqual(["a", "\uFEFFb"])
    expect(decodeAll(cut(bytes, [1, 2])).map((f) => f.data)).toEqual(["a", "\uFEFFb"])
  })

  it("keeps a field name that only begins like data or event out of both", () => {
    const [frame] = decodeAll([encoder.encode("eventual: x\ndatabase: y\ndata\nevent\n\n")])
    expect(frame?.event).toBe("")
    expect(frame?.data).toBe("")
  })

  it("keeps only event and data lines in a frame's text: comments, ids and unknown fields are not relayed", () => {
    const frames = decodeAll([encoder.encode(": secret\n\n: echo\nid: 7\nevent: x\nretry: 1\nfoo: bar\ndata: a\ndata: b\n\n")])
    expect(frames.map((f) => [f.event, f.data, f.text])).toEqual([[undefined, "", ""], ["x", "a\nb", "event: x\ndata: a\ndata: b\n\n"]])
  })

  it("tells the size and the start of the frame still open", () => {
    const decoder = new SseDecoder()
    decoder.push(encoder.encode("data: {\"n\":1}\n\n\nevent: response.output_text.delta\ndata: {\"delta\":\""))
    expect(decoder.pendingHead).toBe("event: response.output_text.delta\ndata: {\"delta\":\"")
    decoder.push(encoder.encode("x".repeat(1000)))
    expect(decoder.pendingHead).toHaveLength(256)
    expect(decoder.pendingHead.startsWith("event: response.output_text.delta\n")).toBe(true)
    expect(decoder.pendingBytes).toBeGreaterThan(1000)
    decoder.push(encoder.encode("\"}\n\n"))
    expect([decoder.pendingBytes, decoder.pendingHead]).toEqual([0, ""])
  })

  it("skips empty frames made of blank lines only", () => {
    expect(decodeAll([encoder.encode("\n\n\n\ndata: x\n\n\n\n")]).map((f) => f.data)).toEqual(["x"])
  })
})

describe("sseFrames", () => {
  it.effect("decodes a byte stream chunked arbitrarily, including the final unterminated frame", () =>
    Effect.gen(function*() {
      const bytes = encoder.encode(`${wire}data: {"last":true}`)
      const chunks = cut(bytes, [1, 2, 3, 50, 51, 200, 201, 202, bytes.length - 3])
      const frames = yield* Stream.fromIterable(chunks).pipe(sseFrames, Stream.runCollect)
      const list = frames
      expect(list.map((f) => f.data).filter((d) => d !== "")).toEqual([...events.map((e) => JSON.stringify(e)), "{\"last\":true}"])
    }))
})

describe("encodeEvent", () => {
  it("writes an event line and one data line of JSON, ending in a blank line", () => {
    const text = encodeEvent({ type: "response.output_text.delta", delta: "a\nb" })
    expect(text).toBe("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\\nb\"}\n\n")
    expect(text.split("\n")).toHaveLength(4)
  })
})

describe("isEventStream", () => {
  it.each([
    ["text/event-stream", true],
    ["text/event-stream; charset=utf-8", true],
    ["Text/Event-Stream;charset=UTF-8", true],
    ["text/html", false],
    ["application/json", false],
    ["", false],
    [undefined, false]
  ])("%s: %s", (contentType, expected) => {
    expect(isEventStream(contentType)).toBe(expected)
  })
})
