/**
 * The image-generation gate as plain functions: intent on a normalised request (including the bypass
 * shapes and the false positives that must pass), and the removal of image items an upstream returns
 * on its own to a group that may not generate images, keeping the stream valid for strict clients.
 */
import { describe, expect, it } from "@effect/vitest"
import { stripImageCalls, wantsImageGeneration } from "../../src/endpoints/responses/policy.js"
import { PassthroughStream } from "../../src/endpoints/responses/passthroughStream.js"
import { SseDecoder } from "../../src/domain/sse.js"
import { image, imageAnswer, message, sseText } from "../support/imageAnswer.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"

/** What the stream writes for one frame, as SSE text (undefined: nothing). */
const onFrame = (state: PassthroughStream, frame: SseFrame): string | undefined => {
  const out = new SseText()
  state.onFrame(frame, out)
  return out.take()
}

import { SseText } from "../../src/endpoints/kit/eventOut.js"
import type { SseFrame } from "../../src/domain/sse.js"

describe("image-generation intent", () => {
  const intent: Array<[string, Record<string, unknown>]> = [
    ["image model", { model: "gpt-image-1" }],
    ["hosted image tool", { model: "m", tools: [{ type: "image_generation", quality: "high" }] }],
    ["namespace named image_gen", { model: "m", tools: [{ type: "namespace", name: "image_gen", tools: [{ type: "function", name: "create" }] }] }],
    ["image tool inside a namespace", { model: "m", tools: [{ type: "namespace", name: "media", tools: [{ type: "custom", name: "image_gen" }] }] }],
    ["custom tool image_gen", { model: "m", tools: [{ type: "custom", name: "image_gen" }] }],
    ["flattened namespace name", { model: "m", tools: [{ type: "function", name: "image_gen__create" }] }],
    ["tool_choice selects it", { model: "m", tool_choice: { type: "image_generation" } }],
    ["allowed_tools lists it", { model: "m", tool_choice: { type: "allowed_tools", mode: "auto", tools: [{ type: "image_generation" }] } }],
    ["image call replayed in input", { model: "m", input: [{ type: "image_generation_call", id: "ig_1", result: "…" }] }]
  ]
  const noIntent: Array<[string, Record<string, unknown>]> = [
    ["a report generator", { model: "m", tools: [{ type: "function", name: "generate_report" }] }],
    ["images mentioned in text", { model: "m", input: "please describe this image generation pipeline" }],
    ["an image as input (vision)", { model: "m", input: [{ role: "user", content: [{ type: "input_image", image_url: "https://x/y.png" }] }] }],
    ["tool_choice required alone", { model: "m", tool_choice: "required", tools: [{ type: "function", name: "lookup" }] }],
    ["a namespace without image tools", { model: "m", tools: [{ type: "namespace", name: "files", tools: [{ type: "function", name: "read" }] }] }]
  ]
  it.each(intent)("%s is image intent", (_, body) => expect(wantsImageGeneration(body)).toBe(true))
  it.each(noIntent)("%s is not", (_, body) => expect(wantsImageGeneration(body)).toBe(false))
})

/** An upstream stream: text item 0, an unrequested image item 1, text item 2. */
const upstreamEvents = () => imageAnswer("gpt-5.4-upstream", "Before. ", "After.").events

const sse = (events: ReadonlyArray<Record<string, unknown>>) => new TextEncoder().encode(sseText(events))

const runThrough = (stream: PassthroughStream) => {
  const decoder = new SseDecoder()
  const out = decoder.push(sse(upstreamEvents())).map((f) => onFrame(stream, f)).filter((t) => t !== undefined).join("")
  return new SseDecoder().push(new TextEncoder().encode(out)).map((f) => JSON.parse(f.data) as Record<string, unknown>)
}

describe("image items removed for groups without image capability", () => {
  it("the stream loses the image item and stays gap-free for strict clients", () => {
    const events = runThrough(new PassthroughStream("gpt-5.4", { stripImageCalls: true }))
    expect(checkResponsesStream(events)).toEqual([])
    expect(JSON.stringify(events)).not.toContain("image_generation_call")
    const last = events.at(-1) as { response: { output: Array<{ id: string }>; model: string } }
    expect(last.response.output.map((o) => o.id)).toEqual(["msg_a", "msg_b"])
    expect(last.response.model).toBe("gpt-5.4")
    expect(events.map((e) => e["sequence_number"])).toEqual(events.map((_, i) => i))
  })

  it("groups that may generate images get the stream as the upstream sent it", () => {
    const events = runThrough(new PassthroughStream("gpt-5.4", { stripImageCalls: false }))
    expect(events.filter((e) => JSON.stringify(e).includes("image_generation_call")).length).toBeGreaterThan(0)
    expect(events.length).toBe(upstreamEvents().length)
  })

  it("a JSON answer loses its image items", () => {
    const body: Record<string, unknown> = { output: [message("msg_a", "x"), image] }
    expect(stripImageCalls(body)).toBe(true)
    expect(body["output"]).toEqual([message("msg_a", "x")])
    expect(stripImageCalls(body)).toBe(false)
  })
})
