/**
 * The passthrough stream's bookkeeping: frames from an OpenAI Responses upstream go to the client
 * untouched, except lifecycle events, which are parsed to restore the requested model name and read
 * usage. If the stream ends without a terminal event (upstream cut, failure, shutdown), `finish`
 * writes the `response.failed` the client needs. For groups without image capability, image
 * generation items the upstream produced on its own are cut out, and the indices and sequence
 * numbers after them closed up so strict clients still see a gap-free stream.
 * Pure and synchronous; one instance per stream.
 */
import { type AnswerFacts, responsesAnswerFacts } from "../../domain/answerFacts.js"
import { newId } from "../../domain/ids.js"
import { responseObject } from "../../domain/responseObject.js"
import { mayHoldResponsesCall, responsesCallOf, type ToolCalls, withCall } from "../../domain/providerTools.js"
import { fromResponsesAnswer } from "../../domain/upstreamJson.js"
import { emptyUsage, type TokenUsage, withToolCalls } from "../../domain/usage.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import type { EventOut } from "../kit/eventOut.js"
import { stripImageCalls } from "./policy.js"

const LIFECYCLE = new Set([
  "response.created",
  "response.in_progress",
  "response.queued",
  "response.completed",
  "response.incomplete",
  "response.failed"
])
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"])
const IMAGE_ITEM = "image_generation_call"

const TYPE = /"type"\s*:\s*"([^"]+)"/
const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/
/**
 * The JSON string value of `"delta"` in `data`, as written (escapes kept), by a plain scan: a
 * regular expression over a delta of several MB overflowed the regex engine's stack and killed the
 * stream. "" when there is none.
 */
const deltaText = (data: string): string => {
  const key = data.indexOf(`"delta"`)
  if (key < 0) return ""
  let at = key + 7
  while (at < data.length && (data.charCodeAt(at) === 32 || data.charCodeAt(at) === 58 /* ":" */)) at++
  if (data.charCodeAt(at) !== 34 /* '"' */) return ""
  const start = ++at
  while (at < data.length) {
    const c = data.charCodeAt(at)
    if (c === 92 /* "\\" */) at += 2
    else if (c === 34) return data.slice(start, at)
    else at++
  }
  return ""
}

export interface StreamEnding {
  readonly code: string
  readonly message: string
}

export interface PassthroughOptions {
  /** Remove image_generation_call items (the group may not generate images). */
  readonly stripImageCalls?: boolean
  /** The client's request body, whose settings a response the gateway writes itself echoes. */
  readonly request?: Record<string, unknown>
}

type Event = Record<string, unknown> & { response?: Record<string, unknown>; output_index?: unknown; item?: unknown }

export class PassthroughStream {
  private responseId: string | undefined
  private createdAt: number | undefined
  private lastSequence = -1
  private terminal = false
  private usage: TokenUsage | undefined
  /** Provider tool calls among the finished items (output_item.done), as they came. */
  private toolCalls: ToolCalls = {}
  /** What the upstream's lifecycle events said of the answer (its id, model, and at the end why it stopped). */
  private answer: AnswerFacts | undefined
  /** The output deltas the client was sent, as written: counted only if the upstream never reports usage. */
  private readonly deltas: Array<string> = []
  private outputChars = 0
  /**
   * The upstream's output_item.done events, as received (parsed only if a closing response.failed
   * must list the finished items, which a stream that completes never needs) or as rewritten.
   */
  private readonly doneEvents: Array<string | Event> = []
  /** Upstream output indices of removed image items, and how many frames were dropped so far. */
  private readonly removed = new Set<number>()
  private dropped = 0

  constructor(readonly requestedModel: string, private readonly options: PassthroughOptions = {}) {}

  get finished(): boolean {
    return this.terminal
  }

  /** Forwards this frame to `out` as it came, rewritten, or not at all. */
  onFrame(frame: SseFrame, out: EventOut): void {
    if (frame.data === "") return // comments and keep-alives: nothing for the client (an upstream's words)
    if (frame.data === "[DONE]") return // not part of the Responses grammar
    if (this.options.stripImageCalls && (this.dropped > 0 || frame.data.includes(IMAGE_ITEM))) {
      return this.rewrite(frame, out)
    }
    const type = frame.event ?? TYPE.exec(frame.data)?.[1]
    const seq = SEQUENCE.exec(frame.data)
    this.lastSequence = seq ? Number(seq[1]) : this.lastSequence + 1
    if (type === "error") {
      const event = parse(frame.data)
      if (event !== undefined) return out.event("error", JSON.stringify(specErrorEvent(event, this.lastSequence)))
    }
    if (type === "response.output_item.done") {
      this.doneEvents.push(frame.data)
      if (mayHoldResponsesCall(frame.data)) this.countCall(parse(frame.data)?.item)
      return out.frame(frame)
    }
    if (type === undefined || !LIFECYCLE.has(type)) {
      if (type?.endsWith(".delta")) {
        const delta = deltaText(frame.data)
        this.deltas.push(delta)
        this.outputChars += delta.length
      }
      return out.frame(frame)
    }
    const event = parse(frame.data)
    if (!event?.response) return out.frame(frame)
    this.observeLifecycle(type, event.response)
    if (event.response["model"] === this.requestedModel) return out.frame(frame)
    event.response["model"] = this.requestedModel
    out.event(type, JSON.stringify(event))
  }

  /** The slow path once image items are involved: every frame is parsed, filtered and renumbered. */
  private rewrite(frame: SseFrame, out: EventOut): void {
    const event = parse(frame.data)
    if (!event) return out.frame(frame)
    const type = typeof event["type"] === "string" ? event["type"] : frame.event ?? ""
    const index = typeof event.output_index === "number" ? event.output_index : undefined
    const isImageItem = (event.item as { type?: unknown } | undefined)?.type === IMAGE_ITEM
    if (type.startsWith(`response.${IMAGE_ITEM}.`) || isImageItem || (index !== undefined && this.removed.has(index))) {
      if (index !== undefined) this.removed.add(index)
      this.dropped++
      return
    }
    if (index !== undefined) event.output_index = index - [...this.removed].filter((r) => r < index).length
    if (typeof event["sequence_number"] === "number") event["sequence_number"] -= this.dropped
    this.lastSequence = typeof event["sequence_number"] === "number" ? event["sequence_number"] : this.lastSequence + 1
    if (type === "response.output_item.done") {
      this.doneEvents.push(event)
      this.countCall(event.item)
    }
    if (type === "error") return out.event(type, JSON.stringify(specErrorEvent(event, this.lastSequence)))
    if (event.response) {
      stripImageCalls(event.response)
      if (LIFECYCLE.has(type)) this.observeLifecycle(type, event.response)
      event.response["model"] = this.requestedModel
    }
    out.event(type, JSON.stringify(event))
  }

  private observeLifecycle(type: string, response: Record<string, unknown>): void {
    if (typeof response["id"] === "string") this.responseId = response["id"]
    if (typeof response["created_at"] === "number") this.createdAt = response["created_at"]
    this.answer = responsesAnswerFacts(response, TERMINAL.has(type))
    if (TERMINAL.has(type)) {
      this.terminal = true
      if (response["usage"]) this.usage = fromResponsesAnswer(response)
    }
  }

  /** A finished output item that is a provider tool call (web_search_call ...): billed per call. */
  private countCall(item: unknown): void {
    const tool = responsesCallOf(item)
    if (tool !== undefined) this.toolCalls = withCall(this.toolCalls, tool)
  }

  /** The items the upstream finished, by output index (a later event for an index wins). */
  private finishedItems(): Array<unknown> {
    const items = new Map<number, unknown>()
    for (const done of this.doneEvents) {
      const event = typeof done === "string" ? parse(done) : done
      if (typeof event?.output_index === "number" && event.item !== undefined) items.set(event.output_index, event.item)
    }
    return [...items].sort(([a], [b]) => a - b).map(([, item]) => item)
  }

  /**
   * The events that close the stream properly if the upstream did not (none when it already ended
   * well). `nowMillis` (the caller's Clock) dates a response the upstream never created.
   */
  finish(ending: StreamEnding, nowMillis: number, out: EventOut): void {
    if (this.terminal) return
    this.terminal = true
    const fields = {
      id: this.responseId ?? newId("resp"),
      model: this.requestedModel,
      createdAt: this.createdAt ?? Math.floor(nowMillis / 1000),
      ...(this.options.request === undefined ? {} : { request: this.options.request })
    }
    const response = responseObject({
      ...fields,
      status: "failed",
      // Clients rebuild the output from the terminal event: keep what the client already saw finished.
      output: this.finishedItems(),
      error: { code: ending.code, message: ending.message }
    })
    if (this.responseId === undefined) {
      // Strict clients need response.created first, even for a stream that failed at once.
      const created = { type: "response.created", sequence_number: ++this.lastSequence, response: responseObject({ ...fields, status: "in_progress" }) }
      out.event(created.type, JSON.stringify(created))
    }
    const failed = { type: "response.failed", sequence_number: ++this.lastSequence, response }
    out.event(failed.type, JSON.stringify(failed))
  }

  /**
   * The upstream's own usage figures, once its terminal event brought them, with the provider tool
   * calls among the items it finished (or its terminal output, whichever lists more).
   */
  reportedUsage(): TokenUsage | undefined {
    return this.usage === undefined ? undefined : withToolCalls(this.usage, this.toolCalls)
  }

  /** The provider tool calls among the items the upstream finished so far. */
  toolCallsSoFar(): ToolCalls {
    return this.toolCalls
  }

  /** What the upstream's events said of its answer so far (the finish reason only from its terminal event). */
  answerFacts(): AnswerFacts | undefined {
    return this.answer
  }

  /** The output text the client was sent so far (JSON escapes kept), for counting its tokens. */
  outputSoFar(): string {
    return this.deltas.join("")
  }

  /**
   * What to bill: the upstream's own figures when it sent them; otherwise (cut or abandoned stream)
   * a rough estimate of what was produced (characters / 4; the settlement counts tokens properly).
   */
  /** The characters of output deltas sent so far (JSON escapes kept). */
  outputCharsSoFar(): number {
    return this.outputChars
  }

  usageSoFar(): TokenUsage {
    return this.usage ?? { ...emptyUsage, outputTokens: Math.ceil(this.outputChars / 4) }
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

/**
 * An upstream `error` event in the Open Responses shape (ErrorStreamingEvent): OpenAI writes
 * `code`, `message` and `param` at the top, the spec nests them with a `type` in `error`. The
 * upstream's code and message are kept, in both places, so the openai SDK (which reads the top)
 * and the spec's clients read the same error.
 */
export const specErrorEvent = (event: Event, sequence: number): Event => {
  const nested: Record<string, unknown> = typeof event["error"] === "object" && event["error"] !== null ? event["error"] as Record<string, unknown> : {}
  const field = (key: string): string | undefined => str(nested[key]) ?? str(event[key])
  const upstreamCode = field("code") ?? null
  const message = field("message") ?? "Upstream error"
  const param = field("param") ?? null
  const type = str(nested["type"]) ?? (upstreamCode?.includes("rate_limit") === true ? "rate_limit_error" : "upstream_error")
  return {
    ...event,
    sequence_number: typeof event["sequence_number"] === "number" ? event["sequence_number"] : sequence,
    code: upstreamCode,
    message,
    param,
    error: { type, code: upstreamCode, message, param }
  }
}

const parse = (data: string): Event | undefined => eventData(data) as Event | undefined
