/**
 * An OpenAI Responses stream read for a door that translates it (the Messages and Chat doors): each
 * frame's event parsed once, and what the stream's billing needs kept beside it: the characters
 * sent (the key's budget) and the answer's facts. The translator then says what the client gets.
 */
import { afterResponsesEvent, type AnswerFacts } from "../../domain/answerFacts.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import { deltaChars } from "./budget.js"

export class ResponsesUpstreamReader {
  private chars = 0
  private answered: AnswerFacts | undefined = undefined

  /** The event a frame carries, or undefined for one that carries none. */
  event(frame: SseFrame): Record<string, unknown> | undefined {
    const event = eventData(frame.data)
    if (event === undefined) return undefined
    this.chars += deltaChars(event)
    this.answered = afterResponsesEvent(this.answered, event)
    return event
  }

  /** Characters of text sent so far, for the key's budget. */
  sentChars(): number {
    return this.chars
  }

  facts(): AnswerFacts | undefined {
    return this.answered
  }
}
