/** src/endpoints/responses/passthroughStream.ts: what the passthrough changes in a stream, and how it closes one. */
import { describe, expect, it } from "@effect/vitest"
import { PassthroughStream, type StreamEnding } from "../../src/endpoints/responses/passthroughStream.js"
import { encodeEvent, SseDecoder, type SseFrame } from "../../src/domain/sse.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"
import { responseObject } from "../../src/domain/responseObject.js"

/** What the stream writes for one frame, as SSE text (undefined: nothing). */
const onFrame = (state: PassthroughStream, frame: SseFrame): string | undefined => {
  const out = new SseText()
  state.onFrame(frame, out)
  return out.take()
}

/** The closing events, as SSE text ("" when none are owed). */
const finish = (state: PassthroughStream, ending: StreamEnding, now: number): string => {
  const out = new SseText()
  state.finish(ending, now, out)
  return out.take() ?? ""
}

import { SseText } from "../../src/endpoints/kit/eventOut.js"

const frameOf = (text: string): SseFrame => {
  const frames = new SseDecoder().push(new TextEncoder().encode(text))
  if (frames.length !== 1 || frames[0] === undefined) throw new Error(`expected one frame in ${JSON.stringify(text)}`)
  return frames[0]
}

/** A spec-complete upstream response object (every field Open Responses requires). */
const response = (status: string, extra: Record<string, unknown> = {}) => ({
  ...responseObject({ id: "resp_abc", model: "upstream-model-2026", createdAt: 1_700_000_123, status }),
  ...extra
})

const usage = {
  input_tokens: 12,
  input_tokens_details: { cached_tokens: 2 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 1 },
  total_tokens: 17
}

const message = { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hello", annotations: [], logprobs: [] }] }

/** A complete text stream as the upstream sends it (model: upstream-model-2026). */
const upstreamEvents: Array<Record<string, unknown>> = [
  { type: "response.created", response: response("in_progress") },
  { type: "response.in_progress", response: response("in_progress") },
  { type: "response.output_item.added", output_index: 0, item: { ...message, status: "in_progress", content: [] } },
  { type: "response.content_part.added", item_id: "msg_1", output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } },
  { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hel", logprobs: [] },
  { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "lo", logprobs: [] },
  { type: "response.output_text.done", item_id: "msg_1", output_index: 0, content_index: 0, text: "Hello", logprobs: [] },
  { type: "response.content_part.done", item_id: "msg_1", output_index: 0, content_index: 0, part: message.content[0] },
  { type: "response.output_item.done", output_index: 0, item: message },
  { type: "response.completed", response: response("completed", { output: [message], usage }) }
].map((e, i) => ({ ...e, sequence_number: i }))

const frames = upstreamEvents.map((e) => frameOf(encodeEvent(e as { type: string })))

const parse = (text: string): Record<string, unknown> => {
  const data = text.split("\n").find((l) => l.startsWith("data: "))
  if (data === undefined) throw new Error(`no data line in ${JSON.stringify(text)}`)
  return JSON.parse(data.slice(6)) as Record<string, unknown>
}

/** Splits concatenated frames into parsed events. */
/** The caller's Clock time (epoch ms) that dates a response the upstream never created. */
const NOW = 1_795_000_000_500

const eventsIn = (text: string) => text.split("\n\n").filter((f) => f.trim() !== "").map((f) => parse(`${f}\n\n`))

describe("PassthroughStream", () => {
  it("rewrites the model on lifecycle events only, and passes every other frame byte for byte", () => {
    const state = new PassthroughStream("gpt-5.4")
    frames.forEach((frame, i) => {
      const out = onFrame(state, frame)
      if (out === undefined) throw new Error("frame dropped")
      const type = upstreamEvents[i]?.["type"] as string
      if (type === "response.created" || type === "response.in_progress" || type === "response.completed") {
        const event = parse(out)
        expect((event["response"] as { model: string }).model).toBe("gpt-5.4")
        // Everything else about the event is unchanged.
        expect({ ...event, response: { ...(event["response"] as object), model: "x" } })
          .toEqual({ ...upstreamEvents[i], response: { ...(upstreamEvents[i]?.["response"] as object), model: "x" } })
        expect(out.startsWith(`event: ${type}\n`)).toBe(true)
      } else {
        expect(out).toBe(frame.text)
      }
    })
    expect(state.finished).toBe(true)
    expect(finish(state, { code: "server_error", message: "late" }, NOW)).toBe("")
  })

  it("leaves a lifecycle frame untouched when the model already matches", () => {
    const state = new PassthroughStream("upstream-model-2026")
    expect(onFrame(state, frames[0]!)).toBe(frames[0]!.text)
  })

  it("drops data: [DONE] and comments (an upstream's words, not events)", () => {
    const state = new PassthroughStream("m")
    expect(onFrame(state, frameOf("data: [DONE]\n\n"))).toBeUndefined()
    expect(onFrame(state, frameOf(": keep-alive\n\n"))).toBeUndefined()
  })

  it("reads the upstream's usage from the terminal event", () => {
    const state = new PassthroughStream("gpt-5.4")
    for (const f of frames) onFrame(state, f)
    expect(state.usageSoFar()).toEqual({
      inputTokens: 12,
      outputTokens: 5,
      cacheReadTokens: 2,
      cacheCreationTokens: 0,
      reasoningTokens: 1
    })
  })

  it("estimates usage from the deltas when the stream was cut", () => {
    const state = new PassthroughStream("gpt-5.4")
    for (const f of frames.slice(0, 6)) onFrame(state, f)
    expect(state.usageSoFar().outputTokens).toBe(Math.ceil("Hello".length / 4))
  })

  it("finish() after a cut: response.failed with the next sequence_number and the same response id", () => {
    const state = new PassthroughStream("gpt-5.4")
    const seen = frames.slice(0, 5).map((f) => parse(onFrame(state, f)!))
    const closing = eventsIn(finish(state, { code: "server_error", message: "upstream went away" }, NOW))
    expect(closing).toHaveLength(1)
    const failed = closing[0] as { type: string; sequence_number: number; response: Record<string, unknown> }
    expect(failed.type).toBe("response.failed")
    expect(failed.sequence_number).toBe(5)
    expect(failed.response).toMatchObject({
      id: "resp_abc",
      object: "response",
      created_at: 1_700_000_123,
      status: "failed",
      model: "gpt-5.4",
      error: { code: "server_error", message: "upstream went away" }
    })
    expect(checkResponsesStream([...seen, failed])).toEqual([])
    // Only once.
    expect(finish(state, { code: "server_error", message: "again" }, NOW)).toBe("")
  })

  it("finish() after an item was done lists that item in response.failed", () => {
    const state = new PassthroughStream("gpt-5.4")
    const seen = frames.slice(0, 9).map((f) => parse(onFrame(state, f)!))
    const [failed] = eventsIn(finish(state, { code: "server_shutting_down", message: "bye" }, NOW))
    expect((failed?.["response"] as { output: unknown }).output).toEqual([message])
    expect(checkResponsesStream([...seen, failed!])).toEqual([])
  })

  it("finish() before anything arrived: response.created then response.failed, a valid stream on its own", () => {
    const state = new PassthroughStream("gpt-5.4")
    const out = eventsIn(finish(state, { code: "server_error", message: "no answer" }, NOW))
    expect(out.map((e) => e["type"])).toEqual(["response.created", "response.failed"])
    expect(out.map((e) => e["sequence_number"])).toEqual([0, 1])
    const [created, failed] = out as Array<{ response: { id: string; model: string; created_at: number } }>
    expect(created?.response.id).toMatch(/^resp_/)
    expect(created?.response.created_at).toBe(1_795_000_000)
    expect(failed?.response.id).toBe(created?.response.id)
    expect(failed?.response.model).toBe("gpt-5.4")
    expect(checkResponsesStream(out)).toEqual([])
  })

  it("finish() after response.completed / incomplete / failed adds nothing", () => {
    for (const terminal of ["response.completed", "response.incomplete", "response.failed"]) {
      const state = new PassthroughStream("gpt-5.4")
      onFrame(state, frames[0]!)
      const status = terminal.slice("response.".length)
      onFrame(state, frameOf(encodeEvent({ type: terminal, sequence_number: 1, response: response(status) })))
      expect(finish(state, { code: "server_error", message: "x" }, NOW)).toBe("")
    }
  })

  it("numbers the closing event after the upstream's own sequence numbers", () => {
    const state = new PassthroughStream("gpt-5.4")
    onFrame(state, frames[0]!)
    onFrame(state, frameOf(encodeEvent({ type: "keepalive", sequence_number: 1 })))
    const [failed] = eventsIn(finish(state, { code: "server_error", message: "x" }, NOW))
    expect(failed?.["sequence_number"]).toBe(2)
  })
})
