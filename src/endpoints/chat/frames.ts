/**
 * The Chat door's SSE grammar: `data:` lines only (no `event:`), `data: [DONE]` last; a stream
 * that fails says so with an `{error}` frame, which the openai SDK throws as an APIError.
 */
import { keepAliveComment, type SseFrame } from "../../domain/sse.js"
import type { Collector } from "../kit/eventOut.js"

/** The last frame's data. */
export const DONE_DATA = "[DONE]"

export const DONE_FRAME = `data: ${DONE_DATA}\n\n`

/** Sent while a stream waits for its slot: an SSE comment, which Chat clients skip. */
export const KEEP_ALIVE_FRAME = keepAliveComment

/** The data of a failed stream's error frame, as OpenAI writes it. */
export const errorData = (code: string, message: string): string =>
  JSON.stringify({ error: { message, type: code === "rate_limit_exceeded" ? "rate_limit_error" : "server_error", code, param: null } })

/** A stream that failed before or while it ran: the error, then `[DONE]`. */
export const errorFrames = (code: string, message: string): string => `data: ${errorData(code, message)}\n\n${DONE_FRAME}`

const encoder = new TextEncoder()

/** Data-only SSE bytes: what a Chat stream's body is made of. */
export class ChatSseBytes implements Collector<Uint8Array> {
  private text = ""
  /** An upstream frame passed on as it came (a Chat server's, to a Chat client). */
  frame(frame: SseFrame): void {
    this.text += frame.text
  }
  event(_type: string, data: string): void {
    this.text += `data: ${data}\n\n`
  }
  take(): Uint8Array | undefined {
    if (this.text === "") return undefined
    const bytes = encoder.encode(this.text)
    this.text = ""
    return bytes
  }
}
