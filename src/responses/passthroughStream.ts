/**
 * The passthrough stream's bookkeeping: frames from an OpenAI Responses upstream go to the client
 * untouched, except lifecycle events, which are parsed to restore the requested model name and read
 * usage. If the stream ends without a terminal event (upstream cut, failure, shutdown), `finish`
 * writes the `response.failed` the client needs. Pure and synchronous; one instance per stream.
 */
import { newId } from "../domain/ids.js"
import { emptyUsage, fromResponsesUsage, type TokenUsage } from "../domain/usage.js"
import { encodeEvent, type SseFrame } from "../sse/codec.js"

const LIFECYCLE = new Set([
  "response.created",
  "response.in_progress",
  "response.queued",
  "response.completed",
  "response.incomplete",
  "response.failed"
])
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"])

const TYPE = /"type"\s*:\s*"([^"]+)"/
const SEQUENCE = /"sequence_number"\s*:\s*(\d+)/
const DELTA = /"delta"\s*:\s*"((?:[^"\\]|\\.)*)"/

export interface StreamEnding {
  readonly code: string
  readonly message: string
}

export class PassthroughStream {
  private responseId: string | undefined
  private createdAt: number | undefined
  private lastSequence = -1
  private terminal = false
  private usage: TokenUsage | undefined
  private outputChars = 0
  /** Items the upstream finished (output_item.done) by output_index: a closing response.failed lists them. */
  private readonly doneItems = new Map<number, unknown>()

  constructor(readonly requestedModel: string) {}

  get finished(): boolean {
    return this.terminal
  }

  /** The text to forward for this frame, or undefined to drop it. */
  onFrame(frame: SseFrame): string | undefined {
    if (frame.data === "") return frame.text // comments and keep-alives pass as they are
    if (frame.data === "[DONE]") return undefined // not part of the Responses grammar
    const type = frame.event ?? TYPE.exec(frame.data)?.[1]
    const seq = SEQUENCE.exec(frame.data)
    this.lastSequence = seq ? Number(seq[1]) : this.lastSequence + 1
    if (type === "response.output_item.done") {
      this.rememberDoneItem(frame.data)
      return frame.text
    }
    if (type === undefined || !LIFECYCLE.has(type)) {
      if (type?.endsWith(".delta")) this.outputChars += DELTA.exec(frame.data)?.[1]?.length ?? 0
      return frame.text
    }
    let event: { response?: Record<string, unknown> }
    try {
      event = JSON.parse(frame.data) as typeof event
    } catch {
      return frame.text
    }
    const response = event.response
    if (!response) return frame.text
    if (typeof response["id"] === "string") this.responseId = response["id"]
    if (typeof response["created_at"] === "number") this.createdAt = response["created_at"]
    if (TERMINAL.has(type)) {
      this.terminal = true
      if (response["usage"]) this.usage = fromResponsesUsage(response["usage"])
    }
    if (response["model"] === this.requestedModel) return frame.text
    response["model"] = this.requestedModel
    return `event: ${type}\ndata: ${JSON.stringify(event)}\n\n`
  }

  private rememberDoneItem(data: string): void {
    try {
      const event = JSON.parse(data) as { output_index?: unknown; item?: unknown }
      if (typeof event.output_index === "number" && event.item !== undefined) this.doneItems.set(event.output_index, event.item)
    } catch {
      // not JSON: forwarded as it is, nothing to remember
    }
  }

  /** Frames that close the stream properly if the upstream did not; "" when it already ended well. */
  finish(ending: StreamEnding): string {
    if (this.terminal) return ""
    this.terminal = true
    let out = ""
    const response = {
      id: this.responseId ?? newId("resp"),
      object: "response",
      created_at: this.createdAt ?? Math.floor(Date.now() / 1000),
      status: "failed",
      model: this.requestedModel,
      // Clients rebuild the output from the terminal event: keep what the client already saw finished.
      output: [...this.doneItems].sort(([a], [b]) => a - b).map(([, item]) => item),
      error: { code: ending.code, message: ending.message },
      incomplete_details: null
    }
    if (this.responseId === undefined) {
      // Strict clients need response.created first, even for a stream that failed at once.
      out += encodeEvent({
        type: "response.created",
        sequence_number: ++this.lastSequence,
        response: { ...response, status: "in_progress", error: null }
      })
    }
    out += encodeEvent({ type: "response.failed", sequence_number: ++this.lastSequence, response })
    return out
  }

  /**
   * What to bill: the upstream's own figures when it sent them; otherwise (cut or abandoned stream)
   * an estimate of what was produced, so a disconnect mid-stream is still charged.
   */
  usageSoFar(): TokenUsage {
    return this.usage ?? { ...emptyUsage, outputTokens: Math.ceil(this.outputChars / 4) }
  }
}
