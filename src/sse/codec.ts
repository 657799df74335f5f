/**
 * Server-sent events: an incremental decoder (bytes in any split -> whole frames) and the encoder.
 * Frames keep their original text so a proxy can forward what it does not need to touch unchanged.
 */
import { Stream } from "effect"

export interface SseFrame {
  /** The `event:` field, if any. */
  readonly event: string | undefined
  /** The `data:` lines joined with "\n"; "" for comment-only frames. */
  readonly data: string
  /** The frame as received, ending in a blank line. */
  readonly text: string
}

const parseFrame = (text: string): SseFrame => {
  let event: string | undefined
  let data: string | undefined
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "event") event = value
    else if (field === "data") data = data === undefined ? value : `${data}\n${value}`
  }
  return { event, data: data ?? "", text: `${text}\n\n` }
}

export class SseDecoder {
  private buffer = ""
  private readonly decoder = new TextDecoder()

  push(chunk: Uint8Array): Array<SseFrame> {
    this.buffer += this.decoder.decode(chunk, { stream: true })
    if (this.buffer.includes("\r")) {
      // A "\r" at the very end may be the first half of a "\r\n" split across chunks: normalising
      // it now would turn that one line end into two (a blank line, a false frame end). Hold it.
      const held = this.buffer.endsWith("\r")
      this.buffer = (held ? this.buffer.slice(0, -1) : this.buffer).replace(/\r\n?/g, "\n") + (held ? "\r" : "")
    }
    const frames: Array<SseFrame> = []
    let end: number
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const text = this.buffer.slice(0, end)
      this.buffer = this.buffer.slice(end + 2)
      if (text.trim() !== "") frames.push(parseFrame(text))
    }
    return frames
  }

  /** A final frame without its blank line still counts (some servers end that way). */
  flush(): Array<SseFrame> {
    const rest = (this.buffer + this.decoder.decode()).replace(/\r\n?/g, "\n").trim()
    this.buffer = ""
    return rest === "" ? [] : [parseFrame(rest)]
  }
}

export const sseFrames = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseFrame, E, R> =>
  Stream.suspend(() => {
    const decoder = new SseDecoder()
    return bytes.pipe(
      Stream.mapConcat((chunk) => decoder.push(chunk)),
      Stream.concat(Stream.sync(() => decoder.flush()).pipe(Stream.flattenIterables))
    )
  })

/** One Responses event as a frame: `event:` line (as the real API sends) plus one-line JSON data. */
export const encodeEvent = (event: { readonly type: string; readonly [field: string]: unknown }): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** An SSE comment: ignored by every parser, keeps proxies and idle timers from closing the stream. */
export const keepAliveComment = ": keep-alive\n\n"
