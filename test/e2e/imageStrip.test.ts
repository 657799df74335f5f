/**
 * An upstream that returns an image_generation_call nobody asked for: a group without the image
 * capability never receives it (JSON or stream, checked by the openai SDK's strict parser), a group
 * with it receives the answer as sent.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import OpenAI from "openai"
import { Upstream } from "../../src/upstream/Upstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const encoder = new TextEncoder()
const usage = {
  input_tokens: 4,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 6,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 10
}
const message = (id: string, text: string) => ({
  id,
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})
const image = { id: "ig_1", type: "image_generation_call", status: "completed", result: "aGVsbG8=" }

const answer = (model: string) => {
  const base = { id: "resp_img", object: "response", created_at: 1, model, tools: [], tool_choice: "auto", parallel_tool_calls: true,
    temperature: 1, top_p: 1, metadata: {}, instructions: null, error: null, incomplete_details: null }
  const output = [message("msg_a", "Here you go. "), image, message("msg_b", "Done.")]
  const events: Array<Record<string, unknown>> = []
  const push = (e: Record<string, unknown>) => events.push({ ...e, sequence_number: events.length })
  push({ type: "response.created", response: { ...base, status: "in_progress", output: [] } })
  const text = (index: number, id: string, t: string) => {
    push({ type: "response.output_item.added", output_index: index, item: { ...message(id, ""), status: "in_progress", content: [] } })
    push({ type: "response.content_part.added", item_id: id, output_index: index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } })
    push({ type: "response.output_text.delta", item_id: id, output_index: index, content_index: 0, delta: t, logprobs: [] })
    push({ type: "response.output_text.done", item_id: id, output_index: index, content_index: 0, text: t, logprobs: [] })
    push({ type: "response.content_part.done", item_id: id, output_index: index, content_index: 0, part: { type: "output_text", text: t, annotations: [], logprobs: [] } })
    push({ type: "response.output_item.done", output_index: index, item: message(id, t) })
  }
  text(0, "msg_a", "Here you go. ")
  push({ type: "response.output_item.added", output_index: 1, item: { ...image, status: "in_progress", result: null } })
  push({ type: "response.image_generation_call.generating", item_id: "ig_1", output_index: 1 })
  push({ type: "response.output_item.done", output_index: 1, item: image })
  text(2, "msg_b", "Done.")
  push({ type: "response.completed", response: { ...base, status: "completed", output, usage } })
  return { json: { ...base, status: "completed", output, usage }, events }
}

const imageUpstream = Upstream.layerTest((_account, request) =>
  Effect.sync(() => {
    const { json, events } = answer((JSON.parse(request.body) as { model: string }).model)
    return request.stream
      ? {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        body: Stream.fromIterable(events.map((e) => encoder.encode(`event: ${String(e["type"])}\ndata: ${JSON.stringify(e)}\n\n`)))
      }
      : { status: 200, headers: { "content-type": "application/json" }, body: Stream.succeed(encoder.encode(JSON.stringify(json))) }
  })
)

describe("image items an upstream returns unasked", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({
      services: { upstream: imageUpstream },
      config: {
        groups: [
          { name: "plain", platform: "openai" },
          { name: "artists", platform: "openai", allow_image_generation: true }
        ],
        users: [{ name: "u", balance_usd: 5 }],
        keys: [
          { key: "sk-plain-000000", user: "u", group: "plain" },
          { key: "sk-artist-00000", user: "u", group: "artists" }
        ],
        accounts: [{ name: "up", platform: "openai", kind: "simulator", groups: ["plain", "artists"] }]
      }
    })
  })
  afterAll(() => gw.close())

  const client = (apiKey: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 })

  it("are removed from a JSON answer for a group without the capability", async () => {
    const res = await client("sk-plain-000000").responses.create({ model: "gpt-5.4", input: "hi" })
    expect(res.output.map((o) => o.type)).toEqual(["message", "message"])
    expect(res.output_text).toBe("Here you go. Done.")
  })

  it("are removed from a stream, which the SDK's strict parser still accepts", async () => {
    const types: Array<string> = []
    const stream = client("sk-plain-000000").responses.stream({ model: "gpt-5.4", input: "hi" })
    stream.on("event", (e) => types.push(e.type))
    const final = await stream.finalResponse()
    expect(final.output.map((o) => o.type)).toEqual(["message", "message"])
    expect(types.some((t) => t.includes("image_generation"))).toBe(false)
  })

  it("reach a group that may generate images", async () => {
    const res = await client("sk-artist-00000").responses.create({ model: "gpt-5.4", input: "hi" })
    expect(res.output.map((o) => o.type)).toEqual(["message", "image_generation_call", "message"])
  })
})
