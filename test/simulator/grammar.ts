/**
 * Test-only checkers: does an event sequence follow the OpenAI Responses streaming grammar
 * (protocols.md 0.2-0.5, 1.6), and what Message does an Anthropic event sequence add up to.
 * They throw with a readable message on the first violation and return what they rebuilt.
 */

type Obj = Record<string, unknown>

const isObj = (u: unknown): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)

const fail = (message: string, event?: unknown): never => {
  throw new Error(`${message}${event === undefined ? "" : `\n  at ${JSON.stringify(event)}`}`)
}

const obj = (u: unknown, what: string): Obj => (isObj(u) ? u : fail(`${what} is not an object`, u))
const str = (u: unknown, what: string): string => (typeof u === "string" ? u : fail(`${what} is not a string`, u))

export interface ResponsesStreamSummary {
  readonly responseId: string
  readonly terminal: Obj
  readonly doneItems: ReadonlyArray<Obj>
  /** Concatenated text deltas per output index (messages only). */
  readonly texts: ReadonlyMap<number, string>
  /** Concatenated argument deltas per output index (function calls only). */
  readonly args: ReadonlyMap<number, string>
}

type ItemState =
  | { kind: "message"; id: string; phase: "added" | "part" | "textDone" | "partDone"; text: string; doneText?: string }
  | { kind: "function_call"; id: string; callId: string; name: string; phase: "added" | "argsDone"; args: string }

const LIFECYCLE = new Set(["response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed"])

export const checkResponsesStream = (events: ReadonlyArray<Obj>): ResponsesStreamSummary => {
  if (events.length < 3) fail("too few events")
  events.forEach((e, i) => {
    if (e["sequence_number"] !== i) fail(`sequence_number ${String(e["sequence_number"])} at position ${i}`, e)
  })
  if (events[0]?.["type"] !== "response.created") fail("first event must be response.created", events[0])
  if (events[1]?.["type"] !== "response.in_progress") fail("second event must be response.in_progress", events[1])
  const responseId = str(obj(events[0]?.["response"], "created.response")["id"], "response.id")

  const items: Array<ItemState> = []
  const doneItems: Array<Obj> = []
  const texts = new Map<number, string>()
  const args = new Map<number, string>()
  let terminal: Obj | undefined

  const current = (e: Obj): { state: ItemState; index: number } => {
    const index = e["output_index"]
    if (typeof index !== "number") return fail("missing output_index", e)
    const state = items[index]
    if (state === undefined) return fail(`event for unknown output_index ${index}`, e)
    if (e["item_id"] !== undefined && e["item_id"] !== state.id) fail("item_id differs from the item's id", e)
    return { state, index }
  }

  for (const [pos, e] of events.entries()) {
    const type = str(e["type"], "type")
    if (terminal !== undefined) fail("event after the terminal event", e)
    if (LIFECYCLE.has(type)) {
      const response = obj(e["response"], `${type}.response`)
      if (response["id"] !== responseId) fail("response id changed", e)
      if (type === "response.created" || type === "response.in_progress") {
        if (pos > 1) fail(`${type} out of place`, e)
        if (response["status"] !== "in_progress") fail("status should be in_progress", e)
        continue
      }
      terminal = response
      continue
    }
    switch (type) {
      case "response.output_item.added": {
        if (e["output_index"] !== items.length) fail(`output_index should be ${items.length}`, e)
        if (doneItems.length < items.length) fail("new item before the previous one finished", e)
        const item = obj(e["item"], "item")
        const id = str(item["id"], "item.id")
        if (item["status"] !== "in_progress") fail("added item must be in_progress", e)
        if (item["type"] === "message") {
          if (!Array.isArray(item["content"]) || item["content"].length !== 0) fail("added message must have content []", e)
          items.push({ kind: "message", id, phase: "added", text: "" })
        } else if (item["type"] === "function_call") {
          if (item["arguments"] !== "") fail("added function_call must have arguments \"\"", e)
          items.push({ kind: "function_call", id, callId: str(item["call_id"], "call_id"), name: str(item["name"], "name"), phase: "added", args: "" })
        } else {
          fail("unexpected item type", e)
        }
        break
      }
      case "response.content_part.added": {
        const { state } = current(e)
        if (state.kind !== "message" || state.phase !== "added") fail("content_part.added out of order", e)
        if (e["content_index"] !== 0) fail("content_index should be 0", e)
        const part = obj(e["part"], "part")
        if (part["type"] !== "output_text" || part["text"] !== "") fail("part should be an empty output_text", e)
        if (state.kind === "message") state.phase = "part"
        break
      }
      case "response.output_text.delta": {
        const { state, index } = current(e)
        if (state.kind !== "message" || state.phase !== "part") return fail("output_text.delta out of order", e)
        const delta = str(e["delta"], "delta")
        if (delta.length === 0) fail("empty delta", e)
        state.text += delta
        texts.set(index, state.text)
        break
      }
      case "response.output_text.done": {
        const { state, index } = current(e)
        if (state.kind !== "message" || state.phase !== "part") return fail("output_text.done out of order", e)
        if (e["text"] !== state.text) fail("output_text.done text differs from the deltas", e)
        state.phase = "textDone"
        texts.set(index, state.text)
        break
      }
      case "response.content_part.done": {
        const { state } = current(e)
        if (state.kind !== "message" || state.phase !== "textDone") return fail("content_part.done out of order", e)
        if (obj(e["part"], "part")["text"] !== state.text) fail("content_part.done text differs", e)
        state.phase = "partDone"
        break
      }
      case "response.function_call_arguments.delta": {
        const { state, index } = current(e)
        if (state.kind !== "function_call" || state.phase !== "added") return fail("arguments delta out of order", e)
        state.args += str(e["delta"], "delta")
        args.set(index, state.args)
        break
      }
      case "response.function_call_arguments.done": {
        const { state, index } = current(e)
        if (state.kind !== "function_call" || state.phase !== "added") return fail("arguments done out of order", e)
        if (e["arguments"] !== state.args) fail("arguments.done differs from the deltas", e)
        if (e["name"] !== state.name) fail("arguments.done name differs", e)
        state.phase = "argsDone"
        args.set(index, state.args)
        break
      }
      case "response.output_item.done": {
        const { state, index } = current(e)
        const item = obj(e["item"], "item")
        if (item["id"] !== state.id) fail("done item id differs", e)
        if (state.kind === "message") {
          if (state.phase !== "partDone") fail("message done before its part finished", e)
          const content = Array.isArray(item["content"]) ? item["content"] : []
          if (content.length !== 1 || obj(content[0], "content[0]")["text"] !== state.text) fail("done message text differs", e)
        } else {
          if (state.phase !== "argsDone") fail("function_call done before its arguments finished", e)
          if (item["arguments"] !== state.args || item["call_id"] !== state.callId) fail("done function_call differs", e)
          if (item["status"] !== "completed") fail("done function_call must be completed", e)
        }
        if (doneItems.length !== index) fail("items finished out of order", e)
        doneItems.push(item)
        break
      }
      default:
        fail(`unknown event type ${type}`, e)
    }
  }
  if (terminal === undefined) return fail("no terminal event")
  if (doneItems.length !== items.length) fail("some items never finished")
  return { responseId, terminal, doneItems, texts, args }
}

export interface RebuiltMessage {
  readonly message: Obj
  readonly content: ReadonlyArray<Obj>
  readonly stopReason: unknown
  readonly usage: Obj
  readonly pings: number
}

/** Checks Anthropic's order and rebuilds the Message the events describe (tool inputs parsed at stop). */
export const rebuildMessage = (events: ReadonlyArray<Obj>): RebuiltMessage => {
  if (events[0]?.["type"] !== "message_start") fail("message_start must come first", events[0])
  const message = obj(events[0]?.["message"], "message")
  if (!Array.isArray(message["content"]) || message["content"].length !== 0) fail("message_start content must be []")
  const usage: Obj = { ...obj(message["usage"], "usage") }
  const content: Array<Obj> = []
  let open: { index: number; block: Obj; json: string; signatures: number; sawSignature: boolean } | undefined
  let stopReason: unknown = null
  let sawDelta = false
  let stopped = false
  let pings = 0
  for (const e of events.slice(1)) {
    const type = str(e["type"], "type")
    if (stopped) fail("event after message_stop", e)
    if (type === "ping") {
      pings++
      continue
    }
    if (sawDelta && type !== "message_delta" && type !== "message_stop") fail("content after message_delta", e)
    switch (type) {
      case "message_start":
        fail("second message_start", e)
        break
      case "content_block_start": {
        if (open !== undefined) fail("block started while another is open", e)
        if (e["index"] !== content.length) fail(`block index should be ${content.length}`, e)
        open = { index: content.length, block: { ...obj(e["content_block"], "content_block") }, json: "", signatures: 0, sawSignature: false }
        break
      }
      case "content_block_delta": {
        if (open === undefined || e["index"] !== open.index) return fail("delta for a block that isn't open", e)
        const delta = obj(e["delta"], "delta")
        if (open.sawSignature) fail("delta after signature_delta", e)
        switch (delta["type"]) {
          case "text_delta":
            open.block["text"] = str(open.block["text"], "text") + str(delta["text"], "text")
            break
          case "thinking_delta":
            open.block["thinking"] = str(open.block["thinking"], "thinking") + str(delta["thinking"], "thinking")
            break
          case "signature_delta":
            open.block["signature"] = str(delta["signature"], "signature")
            open.signatures++
            open.sawSignature = true
            break
          case "input_json_delta":
            open.json += str(delta["partial_json"], "partial_json")
            break
          default:
            fail("unknown delta type", e)
        }
        break
      }
      case "content_block_stop": {
        if (open === undefined || e["index"] !== open.index) return fail("stop for a block that isn't open", e)
        if (open.block["type"] === "tool_use") open.block["input"] = open.json === "" ? {} : (JSON.parse(open.json) as unknown)
        if (open.block["type"] === "thinking" && open.signatures !== 1) fail("thinking block needs exactly one signature_delta", e)
        content.push(open.block)
        open = undefined
        break
      }
      case "message_delta": {
        if (open !== undefined) fail("message_delta with an open block", e)
        sawDelta = true
        stopReason = obj(e["delta"], "delta")["stop_reason"]
        Object.assign(usage, obj(e["usage"], "usage"))
        break
      }
      case "message_stop":
        if (!sawDelta) fail("message_stop before message_delta", e)
        stopped = true
        break
      default:
        fail(`unknown event ${type}`, e)
    }
  }
  if (!stopped) fail("no message_stop")
  return { message, content, stopReason, usage, pings }
}
