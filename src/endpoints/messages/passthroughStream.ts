/**
 * The bookkeeping of a Messages stream relayed from an Anthropic upstream as it came: frames go to
 * the client untouched, except `message_start`, whose model is restored to the requested name when
 * the account maps it. Usage is read from `message_start` (input, cache reads and writes) and
 * `message_delta` (cumulative output). A stream that ends without `message_stop` gets an `error`
 * event, so the client knows it is cut rather than complete. Pure and synchronous; one per stream.
 */
import { type AnswerFacts, messagesAnswerFacts, withStopReason } from "../../domain/answerFacts.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import { messagesCallOf, type ToolCalls, withCall } from "../../domain/providerTools.js"
import { emptyUsage, type TokenUsage, withToolCalls } from "../../domain/usage.js"
import { foldUsage } from "../../translate/output.js"
import type { EventOut } from "../kit/eventOut.js"
import { errorEvent } from "./events.js"

const TYPE = /"type"\s*:\s*"([^"]+)"/

/** The length of a text delta event with no text: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`. */
const DELTA_ENVELOPE = 78

const parse = eventData

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

export interface Ending {
  readonly code: string
  readonly message: string
}

export class MessagesPassthrough {
  private usage: TokenUsage | undefined
  private toolCalls: ToolCalls = {}
  /** What `message_start` and `message_delta` said of the answer (its id, model, stop reason). */
  private answer: AnswerFacts | undefined
  /** Whether `message_delta` said how much was produced (else the output must be estimated). */
  private outputReported = false
  private ended = false
  /** The deltas' data as received: read only to estimate a cut stream's output. */
  private readonly deltas: Array<string> = []
  private deltaChars = 0

  constructor(readonly requestedModel: string) {}

  onFrame(frame: SseFrame, out: EventOut): void {
    if (frame.data === "") return // comments and other frames without data: nothing for the client (an upstream's words)
    const type = frame.event ?? TYPE.exec(frame.data)?.[1]
    switch (type) {
      case "content_block_delta":
        this.deltas.push(frame.data)
        // About the delta's text: the event less its envelope (`{"type":"content_block_delta",...}`).
        this.deltaChars += Math.max(0, frame.data.length - DELTA_ENVELOPE)
        return out.frame(frame)
      case "message_start": {
        const event = parse(frame.data)
        const message = event?.["message"]
        if (!isRecord(message)) return out.frame(frame)
        this.usage = foldUsage(emptyUsage, message["usage"])
        this.answer = messagesAnswerFacts(message)
        if (message["model"] === this.requestedModel) return out.frame(frame)
        message["model"] = this.requestedModel
        return out.event("message_start", JSON.stringify(event))
      }
      case "content_block_start": {
        // A server tool call, billed per call: usage counts no code execution, and a cut stream no usage.
        if (frame.data.includes(`"server_tool_use"`)) {
          const tool = messagesCallOf(parse(frame.data)?.["content_block"])
          if (tool !== undefined) this.toolCalls = withCall(this.toolCalls, tool)
        }
        return out.frame(frame)
      }
      case "message_delta": {
        const event = parse(frame.data)
        this.answer = withStopReason(this.answer, event?.["delta"])
        const usage = event?.["usage"]
        if (isRecord(usage)) {
          this.usage = foldUsage(this.usage ?? emptyUsage, usage)
          if (typeof usage["output_tokens"] === "number") this.outputReported = true
        }
        return out.frame(frame)
      }
      case "message_stop":
      case "error":
        this.ended = true
        return out.frame(frame)
      default:
        return out.frame(frame)
    }
  }

  /** The closing event of a stream that stopped before `message_stop` (nothing for one that finished). */
  finish(early: Ending | undefined, out: EventOut): void {
    if (this.ended && early === undefined) return
    this.ended = true
    const ending = early ?? { code: "server_error", message: "The upstream stream ended before the message was complete" }
    const error = errorEvent(ending.code, ending.message)
    out.event(error.type, JSON.stringify(error))
  }

  /** The usage as the upstream reported it, with the server tool calls; undefined when the output was never reported. */
  reportedUsage(): TokenUsage | undefined {
    return this.outputReported && this.usage !== undefined ? withToolCalls(this.usage, this.toolCalls) : undefined
  }

  /** The server tool calls the upstream started so far. */
  toolCallsSoFar(): ToolCalls {
    return this.toolCalls
  }

  /** What the upstream's events said of its answer so far. */
  answerFacts(): AnswerFacts | undefined {
    return this.answer
  }

  /** The exact input `message_start` gave, if it came (a cut stream keeps it and estimates only the output). */
  startUsage(): TokenUsage | undefined {
    return this.usage
  }

  /** About the characters of text, thinking and tool input sent so far (without parsing them). */
  outputCharsSoFar(): number {
    return this.deltaChars
  }

  /** The text, thinking and tool input sent so far, for estimating a cut stream's output. */
  outputSoFar(): string {
    let out = ""
    for (const data of this.deltas) {
      const delta = parse(data)?.["delta"]
      if (!isRecord(delta)) continue
      for (const key of ["text", "thinking", "partial_json"]) {
        const value = delta[key]
        if (typeof value === "string") out += value
      }
    }
    return out
  }
}
