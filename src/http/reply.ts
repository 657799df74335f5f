/**
 * What a handler answers: a small value the server writes to the socket. A body is either text
 * (JSON, Prometheus) written in one call, or an SSE body that writes its frames itself.
 *
 * SSE bodies write to a sink instead of being an Effect Stream: measured on this gateway, a Stream
 * costs 17-35 µs of CPU per element against under 2 µs for a direct write, and a 20-event answer
 * would spend the whole per-request budget there (docs/performance.md). The body is still an
 * Effect: it runs in the request's fiber and scope, so interruption (client gone) and finalizers
 * (settlement, slots, the upstream connection) work as for any other effect.
 */
import type { Effect } from "effect"

export interface TextReply {
  readonly _tag: "Text"
  readonly status: number
  readonly contentType: string
  readonly body: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  /**
   * Work that follows the answer (the settlement): it runs once the reply is written, still in
   * the request's scope, so the client does not wait for it but nothing is left behind either.
   */
  readonly after?: Effect.Effect<void> | undefined
}

/** Where SSE frames go: the client's socket, with its backpressure. */
export interface SseSink {
  /** Writes already-encoded frames; false when the client's buffer is full (wait for `onDrain`). */
  readonly write: (text: string) => boolean
  /** Calls back once when the client's buffer has room again. */
  readonly onDrain: (callback: () => void) => void
  /** Ends the client's response once the last frame is written; what runs after does not hold the client. */
  readonly end: () => void
}

export interface SseReply {
  readonly _tag: "Sse"
  /** Writes every frame of the stream, ending with its terminal event; never fails. */
  readonly run: (sink: SseSink) => Effect.Effect<void>
}

export type Reply = TextReply | SseReply

export const text = (
  body: string,
  contentType: string,
  status = 200,
  headers?: Readonly<Record<string, string>>
): TextReply => ({ _tag: "Text", status, contentType, body, headers })

/** An already-serialised JSON body (passthrough keeps the upstream's bytes). */
export const rawJson = (body: string, status = 200, headers?: Readonly<Record<string, string>>): TextReply =>
  text(body, "application/json", status, headers)

export const json = (value: unknown, status = 200, headers?: Readonly<Record<string, string>>): TextReply =>
  rawJson(JSON.stringify(value), status, headers)

export const sse = (run: SseReply["run"]): SseReply => ({ _tag: "Sse", run })

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}
