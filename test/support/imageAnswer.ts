/**
 * A Responses answer in which the upstream produced an image_generation_call between two messages,
 * as JSON and as the event stream: for tests of the image gate on answers.
 */
import { responseObject } from "../../src/domain/responseObject.js"

export const usage = {
  input_tokens: 4,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 6,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 10
}

export const message = (id: string, text: string) => ({
  id,
  type: "message",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})

export const image = { id: "ig_1", type: "image_generation_call", status: "completed", result: "aGVsbG8=" }

export const imageAnswer = (model: string, before = "Here you go. ", after = "Done.") => {
  const base = responseObject({ id: "resp_img", createdAt: 1, model, status: "in_progress" })
  const output = [message("msg_a", before), image, message("msg_b", after)]
  const events: Array<Record<string, unknown>> = []
  const push = (e: Record<string, unknown>) => events.push({ ...e, sequence_number: events.length })
  push({ type: "response.created", response: { ...base, status: "in_progress", output: [] } })
  const text = (index: number, id: string, t: string) => {
    const part = (value: string) => ({ type: "output_text", text: value, annotations: [], logprobs: [] })
    const at = { item_id: id, output_index: index, content_index: 0 }
    push({ type: "response.output_item.added", output_index: index, item: { ...message(id, ""), status: "in_progress", content: [] } })
    push({ type: "response.content_part.added", ...at, part: part("") })
    push({ type: "response.output_text.delta", ...at, delta: t, logprobs: [] })
    push({ type: "response.output_text.done", ...at, text: t, logprobs: [] })
    push({ type: "response.content_part.done", ...at, part: part(t) })
    push({ type: "response.output_item.done", output_index: index, item: message(id, t) })
  }
  text(0, "msg_a", before)
  push({ type: "response.output_item.added", output_index: 1, item: { ...image, status: "in_progress", result: null } })
  push({ type: "response.image_generation_call.generating", item_id: "ig_1", output_index: 1 })
  push({ type: "response.image_generation_call.partial_image", item_id: "ig_1", output_index: 1, partial_image_b64: "aGk=" })
  push({ type: "response.output_item.done", output_index: 1, item: image })
  text(2, "msg_b", after)
  push({ type: "response.completed", response: { ...base, status: "completed", output, usage } })
  return { json: { ...base, status: "completed", output, usage }, events }
}

export const sseText = (events: ReadonlyArray<Record<string, unknown>>): string =>
  events.map((e) => `event: ${String(e["type"])}\ndata: ${JSON.stringify(e)}\n\n`).join("")
