/**
 * An OpenAI-compatible Chat server's stream read as Responses events, for every door whose client
 * is not a Chat client (the Responses door writes them, the Messages door translates them on). One
 * reader per stream: it steps the Chat -> Responses stream machine (src/translate/chatUpstream) over
 * each frame, ends it at `[DONE]` (or at the end of the body), and keeps what the stream's billing
 * needs: the server's usage when it sent it, the text sent so far for an estimate when it did not,
 * and the answer's facts.
 */
import { afterChatChunk, type AnswerFacts } from "../../domain/answerFacts.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import type { TokenUsage } from "../../domain/usage.js"
import { chatUsageOf } from "../../translate/chatUpstream/output.js"
import { type ChatStreamEnding, endChatStream, initialChatStreamState, stepChatStream } from "../../translate/chatUpstream/stream.js"
import type { ResponseContext } from "../../translate/output.js"
import type { ResponsesStreamEvent } from "../../translate/types.js"
import { chatDeltaText } from "./budget.js"
import type { EarlyEnd } from "./sseRelay.js"

export class ChatUpstreamReader {
  private state
  private sentText = ""
  private serverUsage: TokenUsage | undefined = undefined
  private answered: AnswerFacts | undefined = undefined

  constructor(ctx: ResponseContext) {
    this.state = initialChatStreamState(ctx)
  }

  /** The Responses events one upstream frame makes. */
  frame(frame: SseFrame): ReadonlyArray<ResponsesStreamEvent> {
    if (frame.data === "[DONE]") return this.end({ _tag: "Done" })
    const chunk = eventData(frame.data)
    if (chunk === undefined) return []
    this.sentText += chatDeltaText(chunk)
    this.serverUsage = chatUsageOf(chunk["usage"]) ?? this.serverUsage
    this.answered = afterChatChunk(this.answered, chunk)
    const [next, events] = stepChatStream(this.state, chunk)
    this.state = next
    return events
  }

  /** The closing events: `early` says why the relay stopped, undefined when the upstream ended it. */
  finish(early: EarlyEnd | undefined): ReadonlyArray<ResponsesStreamEvent> {
    return this.end(early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early })
  }

  /** The server's usage, if its usage chunk came. */
  usage(): TokenUsage | undefined {
    return this.serverUsage
  }

  /** Every text the server sent (content, reasoning, tool arguments), for a budget or an estimate. */
  sent(): string {
    return this.sentText
  }

  facts(): AnswerFacts | undefined {
    return this.answered
  }

  private end(ending: ChatStreamEnding): ReadonlyArray<ResponsesStreamEvent> {
    const [next, events] = endChatStream(this.state, ending)
    this.state = next
    return events
  }
}
