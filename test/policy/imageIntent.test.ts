/**
 * The image-generation gate as plain functions: intent on a normalised request (including the bypass
 * shapes and the false positives that must pass), and the removal of image items an upstream returns
 * on its own to a group that may not generate images, keeping the stream valid for strict clients.
 */
import { describe, expect, it } from "@effect/vitest"
import { stripImageCalls, wantsImageGeneration } from "../../src/responses/policy.js"
import { PassthroughStream } from "../../src/responses/passthroughStream.js"
import { SseDecoder } from "../../src/sse/codec.js"
import { checkResponsesStream } from "../support/responsesGrammar.js"

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

const text = (id: string, t: string) => ({
  id,
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text: t, annotations: [], logprobs: [] }]
})
const usage = {
  input_tokens: 5,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 9,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 14
}
const image = { id: "ig_1", type: "image_generation_call", status: "completed", result: "aGVsbG8=" }

/** An upstream stream: text item 0, an unrequested image item 1, text item 2. */
const upstreamEvents = (): Array<Record<string, unknown>> => {
  const base = { id: "resp_1", object: "response", created_at: 1, model: "gpt-5.4-upstream", output: [] as Array<unknown> }
  const events: Array<Record<string, unknown>> = []
  const push = (e: Record<string, unknown>) => events.push({ ...e, sequence_number: events.length })
  push({ type: "response.created", response: { ...base, status: "in_progress" } })
  const textItem = (index: number, id: string, t: string) => {
    push({ type: "response.output_item.added", output_index: index, item: { ...text(id, ""), status: "in_progress", content: [] } })
    push({ type: "response.content_part.added", item_id: id, output_index: index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } })
    push({ type: "response.output_text.delta", item_id: id, output_index: index, content_index: 0, delta: t, logprobs: [] })
    push({ type: "response.output_text.done", item_id: id, output_index: index, content_index: 0, text: t, logprobs: [] })
    push({ type: "response.content_part.done", item_id: id, output_index: index, content_index: 0, part: { type: "output_text", text: t, annotations: [], logprobs: [] } })
    push({ type: "response.output_item.done", output_index: index, item: text(id, t) })
  }
  textItem(0, "msg_a", "Before. ")
  push({ type: "response.output_item.added", output_index: 1, item: { ...image, status: "in_progress", result: null } })
  push({ type: "response.image_generation_call.generating", item_id: "ig_1", output_index: 1 })
  push({ type: "response.image_generation_call.partial_image", item_id: "ig_1", output_index: 1, partial_image_b64: "aGk=" })
  push({ type: "response.output_item.done", output_index: 1, item: image })
  textItem(2, "msg_b", "After.")
  push({
    type: "response.completed",
    response: { ...base, status: "completed", output: [text("msg_a", "Before. "), image, text("msg_b", "After.")], usage }
  })
  return events
}

const sse = (events: ReadonlyArray<Record<string, unknown>>) =>
  new TextEncoder().encode(events.map((e) => `event: ${String(e["type"])}\ndata: ${JSON.stringify(e)}\n\n`).join(""))

const runThrough = (stream: PassthroughStream) => {
  const decoder = new SseDecoder()
  const out = decoder.push(sse(upstreamEvents())).map((f) => stream.onFrame(f)).filter((t) => t !== undefined).join("")
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
    const body: Record<string, unknown> = { output: [text("msg_a", "x"), image] }
    expect(stripImageCalls(body)).toBe(true)
    expect(body["output"]).toEqual([text("msg_a", "x")])
    expect(stripImageCalls(body)).toBe(false)
  })
})
