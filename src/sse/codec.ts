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

/** One field line: its name and value (one optional leading space dropped); undefined for a comment or a blank line. */
const fieldOf = (line: string): { readonly name: string; readonly value: string } | undefined => {
  if (line === "" || line.charCodeAt(0) === 58 /* ":" */) return undefined
  const colon = line.indexOf(":")
  if (colon < 0) return { name: line, value: "" }
  const valueAt = line.charCodeAt(colon + 1) === 32 /* " " */ ? colon + 2 : colon + 1
  return { name: line.slice(0, colon), value: line.slice(valueAt) }
}

/** A frame's `event` and `data` fields (`id`, `retry` and unknown fields are not used here). */
const parseFrame = (text: string): SseFrame => {
  let event: string | undefined
  let data: string | undefined
  let at = 0
  while (at < text.length) {
    let end = text.indexOf("\n", at)
    if (end < 0) end = text.length
    const field = fieldOf(text.slice(at, end))
    if (field?.name === "event") event = field.value
    else if (field?.name === "data") data = data === undefined ? field.value : `${data}\n${field.value}`
    at = end + 1
  }
  return { event, data: data ?? "", text: `${text}\n\n` }
}

/** Whether a frame is only blank lines and spaces (a stray line end, not an event). */
const isBlank = (text: string): boolean => {
  const first = text.charCodeAt(0)
  // Almost every frame starts with a field name or a comment colon.
  if (first !== 32 && first !== 9 && first !== 10) return text === ""
  return text.trim() === ""
}

const STREAM = { stream: true } as const

export class SseDecoder {
  private buffer = ""
  private readonly decoder = new TextDecoder()

  push(chunk: Uint8Array): Array<SseFrame> {
    let buffer = this.buffer + this.decoder.decode(chunk, STREAM)
    if (buffer.includes("\r")) {
      // A "\r" at the very end may be the first half of a "\r\n" split across chunks: normalising
      // it now would turn that one line end into two (a blank line, a false frame end). Hold it.
      const held = buffer.endsWith("\r")
      buffer = (held ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, "\n") + (held ? "\r" : "")
    }
    const frames: Array<SseFrame> = []
    let start = 0
    let end: number
    while ((end = buffer.indexOf("\n\n", start)) >= 0) {
      const text = buffer.slice(start, end)
      start = end + 2
      if (!isBlank(text)) frames.push(parseFrame(text))
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start)
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
