/**
 * A conformance checker for any OpenAI Responses event stream (translated or passed through).
 * Returns the violations it finds, `[]` for a valid stream. Rules: reference/protocols.md 0, 1.6 and
 * 1.7, i.e. what openai-node 7.x `responses.stream()`, Codex, the Agents SDK and the AI SDK enforce:
 * created first; sequence numbers 0..n; exactly one terminal event, last; output_index handed out
 * in order by output_item.added; item_id equal to the item's id; parts added before their deltas;
 * done texts equal to the concatenated deltas; the terminal `response.output` holding every
 * finished item in order; a usage object Codex can parse; no event types clients don't know.
 * No vitest imports, so benchmarks and scripts can use it too.
 */
import { isDeepStrictEqual } from "node:util"
import { eventIssues } from "./openResponses.js"

const LIFECYCLE = new Set([
  "response.created",
  "response.queued",
  "response.in_progress",
  "response.completed",
  "response.incomplete",
  "response.failed"
])
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"])

/** Item-scoped event type -> the output item type it must target. */
const ITEM_EVENTS: Readonly<Record<string, string>> = {
  "response.output_text.delta": "message",
  "response.output_text.done": "message",
  "response.output_text.annotation.added": "message",
  "response.refusal.delta": "message",
  "response.refusal.done": "message",
  "response.function_call_arguments.delta": "function_call",
  "response.function_call_arguments.done": "function_call",
  "response.custom_tool_call_input.delta": "custom_tool_call",
  "response.custom_tool_call_input.done": "custom_tool_call",
  "response.mcp_call_arguments.delta": "mcp_call",
  "response.mcp_call_arguments.done": "mcp_call",
  "response.mcp_call.in_progress": "mcp_call",
  "response.mcp_call.completed": "mcp_call",
  "response.mcp_call.failed": "mcp_call",
  "response.reasoning_text.delta": "reasoning",
  "response.reasoning_text.done": "reasoning",
  "response.reasoning_summary_part.added": "reasoning",
  "response.reasoning_summary_part.done": "reasoning",
  "response.reasoning_summary_text.delta": "reasoning",
  "response.reasoning_summary_text.done": "reasoning",
  "response.code_interpreter_call_code.delta": "code_interpreter_call",
  "response.code_interpreter_call_code.done": "code_interpreter_call",
  "response.code_interpreter_call.in_progress": "code_interpreter_call",
  "response.code_interpreter_call.interpreting": "code_interpreter_call",
  "response.code_interpreter_call.completed": "code_interpreter_call",
  "response.file_search_call.in_progress": "file_search_call",
  "response.file_search_call.searching": "file_search_call",
  "response.file_search_call.completed": "file_search_call",
  "response.web_search_call.in_progress": "web_search_call",
  "response.web_search_call.searching": "web_search_call",
  "response.web_search_call.completed": "web_search_call",
  "response.image_generation_call.in_progress": "image_generation_call",
  "response.image_generation_call.generating": "image_generation_call",
  "response.image_generation_call.completed": "image_generation_call",
  "response.image_generation_call.partial_image": "image_generation_call"
}

/** Events clients accept that this checker does not track further. */
const OTHER_KNOWN = new Set([
  "response.output_item.added",
  "response.output_item.done",
  "response.content_part.added",
  "response.content_part.done",
  "response.audio.delta",
  "response.audio.done",
  "response.audio.transcript.delta",
  "response.audio.transcript.done",
  "response.mcp_list_tools.in_progress",
  "response.mcp_list_tools.completed",
  "response.mcp_list_tools.failed",
  "keepalive",
  "error"
])

type Rec = Record<string, unknown>

const isRec = (u: unknown): u is Rec => typeof u === "object" && u !== null && !Array.isArray(u)
const isInt = (u: unknown): u is number => typeof u === "number" && Number.isInteger(u) && u >= 0

/** A streamed piece of text (content part, summary part, arguments) and whether it was closed. */
interface Piece {
  readonly type: string
  text: string
  textDone: boolean
  done: boolean
}

interface Tracked {
  readonly outputIndex: number
  readonly added: Rec
  readonly id: unknown
  readonly type: string
  readonly parts: Array<Piece>
  readonly reasoningParts: Array<Piece>
  readonly summary: Array<Piece>
  args: Piece | undefined
  done: Rec | undefined
}

/** Checks a Responses `usage` the way Codex parses it. `where` prefixes the messages. */
export const checkUsage = (usage: unknown, where: string): Array<string> => {
  if (!isRec(usage)) return [`${where}: usage must be an object`]
  const v: Array<string> = []
  for (const key of ["input_tokens", "output_tokens", "total_tokens"]) {
    if (!isInt(usage[key])) v.push(`${where}: usage.${key} must be a non-negative integer`)
  }
  const inDetails = usage["input_tokens_details"]
  const outDetails = usage["output_tokens_details"]
  if (!isRec(inDetails) || !isInt(inDetails["cached_tokens"])) v.push(`${where}: usage.input_tokens_details.cached_tokens must be an integer`)
  if (!isRec(outDetails) || !isInt(outDetails["reasoning_tokens"])) v.push(`${where}: usage.output_tokens_details.reasoning_tokens must be an integer`)
  if (isInt(usage["input_tokens"]) && isInt(usage["output_tokens"]) && usage["total_tokens"] !== usage["input_tokens"] + usage["output_tokens"]) {
    v.push(`${where}: usage.total_tokens must equal input_tokens + output_tokens`)
  }
  return v
}

const textOfPart = (part: Rec): string =>
  typeof part["text"] === "string" ? part["text"] : typeof part["refusal"] === "string" ? part["refusal"] : ""

export const checkResponsesStream = (events: ReadonlyArray<Record<string, unknown>>): Array<string> => {
  const violations: Array<string> = []
  const items: Array<Tracked> = []
  const ids = new Set<unknown>()
  let responseId: unknown
  let terminalAt = -1
  let pendingError = -1

  events.forEach((e, i) => {
    const type = e["type"]
    const at = `#${i} ${String(type)}`
    const bad = (msg: string) => violations.push(`${at}: ${msg}`)
    if (typeof type !== "string") return bad("missing type")
    // Each event's own shape, by the Open Responses schema (required fields, types, enums).
    for (const issue of eventIssues(e, "sse", "")) bad(issue)
    if (e["sequence_number"] !== i) bad(`sequence_number ${String(e["sequence_number"])}, expected ${i}`)
    if (i === 0 && type !== "response.created") bad("the first event must be response.created")
    if (terminalAt >= 0) bad("event after the terminal event")
    if (!LIFECYCLE.has(type) && !OTHER_KNOWN.has(type) && !(type in ITEM_EVENTS)) return bad("unknown event type")

    if (LIFECYCLE.has(type)) {
      const r = e["response"]
      if (!isRec(r)) return bad("lifecycle events need a response object")
      if (i === 0) responseId = r["id"]
      if (typeof r["id"] !== "string" || r["id"] === "") bad("response.id must be a non-empty string")
      else if (r["id"] !== responseId) bad(`response.id changed from ${String(responseId)} to ${r["id"]}`)
      if (r["object"] !== "response") bad("response.object must be 'response'")
      if (!isInt(r["created_at"])) bad("response.created_at must be an integer")
      if (typeof r["model"] !== "string") bad("response.model must be a string")
      if (!Array.isArray(r["output"])) bad("response.output must be an array")
      const expected = type === "response.completed"
        ? ["completed"]
        : type === "response.incomplete"
        ? ["incomplete"]
        : type === "response.failed"
        ? ["failed"]
        : ["in_progress", "queued"]
      if (!expected.includes(String(r["status"]))) bad(`response.status '${String(r["status"])}' does not fit ${type}`)
      if (TERMINAL.has(type)) {
        terminalAt = i
        checkTerminal(type, r, items, bad)
      }
      return
    }

    if (type === "keepalive") return
    if (type === "error") {
      pendingError = i
      return
    }

    const outputIndex = e["output_index"]
    if (type === "response.output_item.added") {
      const item = e["item"]
      if (outputIndex !== items.length) bad(`output_index ${String(outputIndex)}, expected ${items.length}`)
      if (!isRec(item) || typeof item["type"] !== "string") return bad("item must be an object with a type")
      const optionalId = item["type"] === "function_call" || item["type"] === "custom_tool_call"
      if (!(optionalId && item["id"] === undefined) && (typeof item["id"] !== "string" || item["id"] === "")) {
        bad("item.id must be a non-empty string")
      }
      if (item["id"] !== undefined && ids.has(item["id"])) bad(`duplicate item id ${String(item["id"])}`)
      ids.add(item["id"])
      if (item["status"] !== undefined && item["status"] !== "in_progress") bad("an added item's status must be in_progress")
      if (item["type"] === "function_call") {
        for (const key of ["call_id", "name", "arguments"]) {
          if (typeof item[key] !== "string") bad(`function_call item needs a string ${key}`)
        }
      }
      const content = Array.isArray(item["content"]) ? item["content"] : []
      const summary = Array.isArray(item["summary"]) ? item["summary"] : []
      items.push({
        outputIndex: items.length,
        added: item,
        id: item["id"],
        type: item["type"],
        parts: content.filter(isRec).map((p) => ({ type: String(p["type"]), text: textOfPart(p), textDone: true, done: true })),
        reasoningParts: [],
        summary: summary.filter(isRec).map((p) => ({ type: "summary_text", text: textOfPart(p), textDone: true, done: true })),
        args: undefined,
        done: undefined
      })
      return
    }

    const tracked = isInt(outputIndex) ? items[outputIndex] : undefined
    if (tracked === undefined) return bad(`output_index ${String(outputIndex)} was never added`)
    if (tracked.done !== undefined) return bad(`item at output_index ${String(outputIndex)} is already done`)
    if (type !== "response.output_item.done" && e["item_id"] !== tracked.id) {
      bad(`item_id ${String(e["item_id"])} does not match the item's id ${String(tracked.id)}`)
    }
    const part = e["part"]
    const expectedType = type === "response.content_part.added" || type === "response.content_part.done"
      ? (isRec(part) && part["type"] === "reasoning_text" ? "reasoning" : "message")
      : ITEM_EVENTS[type]
    if (expectedType !== undefined && expectedType !== tracked.type) bad(`targets a ${tracked.type} item, expected ${expectedType}`)
    checkItemEvent(type, e, tracked, bad)
  })

  if (events.length === 0) violations.push("no events")
  else if (terminalAt < 0) violations.push("no terminal event (response.completed / incomplete / failed)")
  else if (terminalAt !== events.length - 1) violations.push("the terminal event is not the last event")
  if (pendingError >= 0 && events[terminalAt]?.["type"] !== "response.failed") {
    violations.push(`#${pendingError} error: an error event must be followed by response.failed`)
  }
  return violations
}

/** Deltas and dones of one item; `bad` records a violation against the current event. */
const checkItemEvent = (type: string, e: Rec, t: Tracked, bad: (msg: string) => void): void => {
  const index = (key: string, list: Array<Piece>): Piece | undefined => {
    const n = e[key]
    const piece = isInt(n) ? list[n] : undefined
    if (piece === undefined) bad(`${key} ${String(n)} was never added`)
    return piece
  }
  const appendTo = (piece: Piece | undefined, delta: unknown) => {
    if (piece === undefined) return
    if (piece.textDone) return bad("delta after done")
    if (typeof delta !== "string" || delta === "") return bad("delta must be a non-empty string")
    piece.text += delta
  }
  const closeText = (piece: Piece | undefined, text: unknown) => {
    if (piece === undefined) return
    if (piece.textDone) return bad("done twice")
    if (text !== piece.text) bad(`done text ${JSON.stringify(text)} differs from the deltas ${JSON.stringify(piece.text)}`)
    piece.textDone = true
  }
  const addPiece = (key: string, list: Array<Piece>, partType: string) => {
    if (e[key] !== list.length) bad(`${key} ${String(e[key])}, expected ${list.length}`)
    else list.push({ type: partType, text: isRec(e["part"]) ? textOfPart(e["part"]) : "", textDone: false, done: false })
  }
  const closePiece = (piece: Piece | undefined) => {
    if (piece === undefined) return
    if (piece.done) return bad("part done twice")
    if (!piece.textDone && (piece.type === "output_text" || piece.type === "summary_text" || piece.type === "reasoning_text")) {
      bad("part done before its text was done")
    }
    if (isRec(e["part"]) && textOfPart(e["part"]) !== piece.text) bad("the done part's text differs from the streamed text")
    piece.done = true
  }
  const args = (): Piece => {
    t.args ??= { type: "arguments", text: String(t.added["arguments"] ?? t.added["input"] ?? ""), textDone: false, done: false }
    return t.args
  }
  const reasoning = isRec(e["part"]) && e["part"]["type"] === "reasoning_text"

  switch (type) {
    case "response.content_part.added": {
      const part = e["part"]
      if (!isRec(part)) return bad("part must be an object")
      return addPiece("content_index", reasoning ? t.reasoningParts : t.parts, String(part["type"]))
    }
    case "response.content_part.done":
      return closePiece(index("content_index", reasoning ? t.reasoningParts : t.parts))
    case "response.output_text.delta":
    case "response.refusal.delta":
      return appendTo(index("content_index", t.parts), e["delta"])
    case "response.output_text.done":
      return closeText(index("content_index", t.parts), e["text"])
    case "response.refusal.done":
      return closeText(index("content_index", t.parts), e["refusal"])
    case "response.reasoning_text.delta":
      return appendTo(index("content_index", t.reasoningParts), e["delta"])
    case "response.reasoning_text.done":
      return closeText(index("content_index", t.reasoningParts), e["text"])
    case "response.reasoning_summary_part.added":
      return addPiece("summary_index", t.summary, "summary_text")
    case "response.reasoning_summary_part.done":
      return closePiece(index("summary_index", t.summary))
    case "response.reasoning_summary_text.delta":
      return appendTo(index("summary_index", t.summary), e["delta"])
    case "response.reasoning_summary_text.done":
      return closeText(index("summary_index", t.summary), e["text"])
    case "response.function_call_arguments.delta":
    case "response.custom_tool_call_input.delta":
    case "response.mcp_call_arguments.delta":
      return appendTo(args(), e["delta"])
    case "response.function_call_arguments.done":
    case "response.mcp_call_arguments.done":
      if (e["name"] !== undefined && e["name"] !== t.added["name"]) bad("name differs from the item's name")
      return closeText(args(), e["arguments"])
    case "response.custom_tool_call_input.done":
      return closeText(args(), e["input"])
    case "response.output_item.done":
      return checkItemDone(e["item"], t, bad)
    default:
      return
  }
}

const checkItemDone = (item: unknown, t: Tracked, bad: (msg: string) => void): void => {
  if (!isRec(item)) return bad("item must be an object")
  if (item["type"] !== t.type) bad(`item type changed from ${t.type} to ${String(item["type"])}`)
  if (item["id"] !== t.id && !(t.id === undefined && (t.type === "function_call" || t.type === "custom_tool_call"))) {
    bad(`item id changed from ${String(t.id)} to ${String(item["id"])}`)
  }
  if (t.added["call_id"] !== undefined && item["call_id"] !== t.added["call_id"]) bad("call_id changed between added and done")
  if (item["status"] !== undefined && item["status"] !== "completed" && item["status"] !== "incomplete") {
    bad(`a done item's status must be completed or incomplete, got ${String(item["status"])}`)
  }
  const texts = (list: unknown) => (Array.isArray(list) ? list.filter(isRec).map(textOfPart) : [])
  const compare = (label: string, pieces: Array<Piece>, final: unknown) => {
    if (pieces.some((p) => !p.done)) bad(`${label}: a part was never done`)
    if (!isDeepStrictEqual(texts(final), pieces.map((p) => p.text))) bad(`${label} differs from what was streamed`)
  }
  if (t.type === "message") compare("content", t.parts, item["content"])
  if (t.type === "reasoning") {
    compare("summary", t.summary, item["summary"])
    if (t.reasoningParts.length > 0) compare("content", t.reasoningParts, item["content"])
  }
  if (t.args !== undefined) {
    if (!t.args.textDone) bad("arguments were never done")
    const final = t.type === "custom_tool_call" ? item["input"] : item["arguments"]
    if (final !== t.args.text) bad("the done item's arguments differ from what was streamed")
  }
  t.done = item
}

const identity = (item: unknown): unknown => (isRec(item) ? item["id"] ?? item["call_id"] : undefined)

const checkTerminal = (type: string, r: Rec, items: ReadonlyArray<Tracked>, bad: (msg: string) => void): void => {
  const output = Array.isArray(r["output"]) ? r["output"] : []
  const finished = items.flatMap((t) => (t.done === undefined ? [] : [t.done]))
  if (type === "response.failed") {
    const error = r["error"]
    if (!isRec(error) || typeof error["code"] !== "string" || typeof error["message"] !== "string") {
      bad("response.error must be {code, message} strings")
    }
    if (r["usage"] !== null && r["usage"] !== undefined) checkUsage(r["usage"], "response").forEach(bad)
    // A failed response may list unfinished items, but every finished one must be there, in order.
    const positions = output.map((o) => items.findIndex((t) => identity(t.added) === identity(o)))
    if (positions.some((p) => p < 0)) bad("response.output lists an item that was never added")
    if (positions.some((p, k) => k > 0 && p <= (positions[k - 1] ?? -1))) bad("response.output is out of order")
    for (const done of finished) {
      if (!output.some((o) => isDeepStrictEqual(o, done))) bad(`response.output lacks finished item ${String(identity(done))}`)
    }
    return
  }
  if (items.some((t) => t.done === undefined)) bad("an added item was never done")
  if (!isDeepStrictEqual(output, finished)) bad("response.output differs from the output_item.done items")
  if (type === "response.incomplete") {
    const details = r["incomplete_details"]
    if (!isRec(details) || typeof details["reason"] !== "string") bad("response.incomplete_details.reason must be a string")
  }
  checkUsage(r["usage"], "response").forEach(bad)
}
