/**
 * Large upstream SSE events (issue 16, item 4): a single 16 MB event arriving in 64 KB chunks is
 * decoded whole and once (the decoder appends chunks that end no frame instead of rescanning what
 * it holds), a multi-MB delta is counted without a regular expression, and an event past
 * MAX_SSE_EVENT_BYTES ends the client's stream with response.failed naming the limit.
 */
import { Effect, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { PassthroughStream } from "../../src/endpoints/responses/passthroughStream.js"
import { relaySse } from "../../src/endpoints/kit/sseRelay.js"
import { SseDecoder } from "../../src/domain/sse.js"

/** What the stream writes for one frame, as SSE text (undefined: nothing). */
const onFrame = (state: PassthroughStream, frame: SseFrame): string | undefined => {
  const out = new SseText()
  state.onFrame(frame, out)
  return out.take()
}

import { SseText } from "../../src/endpoints/kit/eventOut.js"
import type { SseFrame } from "../../src/domain/sse.js"

const MB = 1024 * 1024
const encoder = new TextEncoder()

/** One delta event carrying `size` characters, as the OpenAI Responses API frames it. */
const bigDelta = (size: number) =>
  `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":3,"delta":"${"x".repeat(size)}"}\n\n`

const chunked = (text: string, size: number): Array<Uint8Array> => {
  const bytes = encoder.encode(text)
  const out: Array<Uint8Array> = []
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size))
  return out
}

describe("large SSE events", () => {
  it("a 16 MB event in 64 KB chunks comes out as one whole frame, after the frames before it", () => {
    const decoder = new SseDecoder()
    const text = `event: a\ndata: {"n":1}\n\n${bigDelta(16 * MB)}event: b\ndata: {"n":2}\n\n`
    const frames = chunked(text, 64 * 1024).flatMap((chunk) => decoder.push(chunk))
    expect(frames.map((f) => f.event)).toEqual(["a", "response.output_text.delta", "b"])
    const sent = bigDelta(16 * MB)
    expect(frames[1]!.data).toBe(sent.slice(sent.indexOf("data: ") + 6, -2))
    expect(decoder.flush()).toEqual([])
  })

  it("a multi-MB delta counts toward the output estimate of a cut stream", () => {
    const state = new PassthroughStream("gpt-5.4")
    const decoder = new SseDecoder()
    for (const chunk of chunked(bigDelta(8 * MB), 64 * 1024)) for (const frame of decoder.push(chunk)) onFrame(state, frame)
    expect(state.usageSoFar().outputTokens).toBe(2 * MB)
  })

  it("an event past the limit ends the stream with response.failed upstream_error naming the limit", async () => {
    const state = new PassthroughStream("gpt-5.4")
    const created = `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-5.4","output":[]}}\n\n`
    const body = Stream.fromIterable([encoder.encode(created), ...chunked(bigDelta(2 * MB), 64 * 1024)])
    const relayed = relaySse(body, {
      frames: (frames, out) => {
        for (const f of frames) state.onFrame(f, out)
      },
      finish: (early, out) => state.finish(early ?? { code: "server_error", message: "cut" }, 1_795_000_000_000, out)
    }, () => false, MB)
    const out = Buffer.concat(await Effect.runPromise(Stream.runCollect(relayed))).toString("utf8")
    const events = out.split("\n\n").filter((f) => f !== "").map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { type: string; response?: { error?: { code: string; message: string } } })
    expect(events.map((e) => e.type)).toEqual(["response.created", "response.failed"])
    expect(events[1]!.response?.error).toMatchObject({ code: "upstream_error" })
    expect(events[1]!.response?.error?.message).toContain(`MAX_SSE_EVENT_BYTES (${MB} bytes)`)
  })
})
