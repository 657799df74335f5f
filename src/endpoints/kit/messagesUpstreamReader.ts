/**
 * An Anthropic Messages stream read as Responses events, for the doors whose clients are not
 * Messages clients (the Responses door writes them, the Chat door translates them on). One reader
 * per stream: it steps the Messages -> Responses stream machine (src/translate/stream.ts) over each
 * frame and keeps what the stream's billing needs: the usage so far, the characters sent, the
 * answer's facts.
 */
import { afterMessagesEvent, type AnswerFacts } from "../../domain/answerFacts.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import type { TokenUsage } from "../../domain/usage.js"
import type { ResponseContext } from "../../translate/output.js"
import { finishStream, initialStreamState, stepStream, streamUsage } from "../../translate/stream.js"
import type { AnthropicStreamEvent, ResponsesStreamEvent } from "../../translate/types.js"
import { deltaChars } from "./budget.js"
import type { EarlyEnd } from "./sseRelay.js"

export class MessagesUpstreamReader {
  private state
  private chars = 0
  private answered: AnswerFacts | undefined = undefined

  constructor(ctx: ResponseContext) {
    this.state = initialStreamState(ctx)
  }

  /** The Responses events one upstream frame makes. */
  frame(frame: SseFrame): ReadonlyArray<ResponsesStreamEvent> {
    const event = eventData(frame.data)
    if (event === undefined || typeof event["type"] !== "string") return []
    this.chars += deltaChars(event)
    this.answered = afterMessagesEvent(this.answered, event)
    // A Messages event as the machine reads it: it checks every member it touches.
    const [next, events] = stepStream(this.state, event as AnthropicStreamEvent)
    this.state = next
    return events
  }

  /** The closing events, if the upstream did not end the stream itself: `early` says why it stopped. */
  finish(early: EarlyEnd | undefined): ReadonlyArray<ResponsesStreamEvent> {
    return finishStream(this.state, early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early })
  }

  /** The usage the upstream reported so far (Anthropic reports input at the start, output at the end). */
  usage(): TokenUsage {
    return streamUsage(this.state)
  }

  /** Characters of text sent so far, for the key's budget. */
  sentChars(): number {
    return this.chars
  }

  facts(): AnswerFacts | undefined {
    return this.answered
  }
}
