/**
 * Server-sent events: an incremental decoder (bytes in any split -> whole frames) and the encoder.
 * Frames keep their original text so a proxy can forward what it does not need to touch unchanged,
 * but only their `event:` and `data:` lines: comments, ids and unknown fields are what an upstream
 * page says beside the events (an echo of the request's headers among them), never relayed.
 */
import { StringDecoder } from "node:string_decoder"
import { Stream } from "effect"

export interface SseFrame {
  /** The `event:` field, if any. */
  readonly event: string | undefined
  /** The `data:` lines joined with "\n"; "" for comment-only frames. */
  readonly data: string
  /**
   * The frame as received, ending in a blank line, when it holds only `event:` and `data:` lines;
   * else rebuilt from those two ("" for a frame without data, such as a comment).
   */
  readonly text: string
}

/** The value of field `name` on the line text[at, end), or undefined if the line is another field. */
const fieldValue = (text: string, at: number, end: number, name: string): string | undefined => {
  if (!text.startsWith(name, at)) return undefined
  let valueAt = at + name.length
  if (valueAt === end) return "" // a field name alone: an empty value
  if (text.charCodeAt(valueAt) !== 58 /* ":" */) return undefined // a longer name, e.g. "database"
  valueAt += text.charCodeAt(valueAt + 1) === 32 /* " " */ ? 2 : 1 // one optional leading space dropped
  return text.slice(valueAt, end)
}

/** A frame of only these fields, as SSE text. */
const frameText = (event: string | undefined, data: string | undefined): string =>
  data === undefined ? "" : `${event === undefined ? "" : `event: ${event}\n`}data: ${data.replaceAll("\n", "\ndata: ")}\n\n`

/**
 * A frame's `event` and `data` fields (`id`, `retry`, comments and unknown fields are not used,
 * and not kept in its text). `text` ends with the blank line that closed it. Lines are read in
 * place, without an object or a copy per line: a stream's frames are most of what the gateway decodes.
 */
const parseFrame = (text: string): SseFrame => {
  let event: string | undefined
  let data: string | undefined
  let other = false
  const stop = text.length - 2
  let at = 0
  while (at < stop) {
    let end = text.indexOf("\n", at)
    if (end < 0 || end > stop) end = stop
    const value = fieldValue(text, at, end, "data")
    if (value !== undefined) data = data === undefined ? value : `${data}\n${value}`
    else {
      const name = fieldValue(text, at, end, "event")
      if (name !== undefined) event = name
      else other = true
    }
    at = end + 1
  }
  return { event, data: data ?? "", text: other ? frameText(event, data) : text }
}

/** Whether a frame is only blank lines and spaces (a stray line end, not an event). */
const isBlank = (text: string): boolean => {
  const first = text.charCodeAt(0)
  // Almost every frame starts with a field name or a comment colon.
  if (first !== 32 && first !== 9 && first !== 10) return false
  return text.trim() === ""
}

/** How much of an open frame's start is kept to read its event name (`event:` line or data's `"type"`). */
const PENDING_HEAD = 256

/** `text` without the blank lines before a frame, at most PENDING_HEAD characters. */
const headOf = (text: string): string => {
  let at = 0
  while (text.charCodeAt(at) === 10) at++
  return text.slice(at, at + PENDING_HEAD)
}

export class SseDecoder {
  /** The text of the frame still open: grows by concatenation (cheap), is searched only when a chunk holds a frame end. */
  private buffer = ""
  /** The buffer's bytes, about (for the event size limit). */
  private bufferBytes = 0
  /** The start of the frame still open, kept apart so reading it never copies the whole buffer. */
  private head = ""
  /** The buffer ends with "\n": a chunk that starts with one ends a frame. */
  private endsWithNewline = false
  /** A "\r" at the very end of the last chunk, held: it may be the first half of a "\r\n". */
  private heldCR = false
  /** An event grew past the limit: the rest of the stream is not decoded. */
  overflowed = false
  /**
   * node:string_decoder rather than TextDecoder: the same UTF-8 decoding (a character split
   * between chunks is held, invalid bytes become U+FFFD) for a quarter of the CPU on small chunks.
   * Unlike TextDecoder it keeps a byte order mark, which the SSE grammar says to drop.
   */
  private readonly decoder = new StringDecoder("utf8")
  private atStart = true

  /** `maxEventBytes`: the largest event taken; past it `overflowed` is set and decoding stops. */
  constructor(private readonly maxEventBytes = Infinity) {}

  /** The bytes of the frame still open (about; 0 between frames): what arrived of an event not yet whole. */
  get pendingBytes(): number {
    return this.bufferBytes
  }

  /** The first characters of the frame still open (up to PENDING_HEAD), to tell what event it is. */
  get pendingHead(): string {
    return this.head
  }

  private decode(chunk: Uint8Array | undefined): string {
    let text = chunk === undefined ? this.decoder.end() : this.decoder.write(chunk)
    if (this.atStart && text !== "") {
      this.atStart = false
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    return text
  }

  /**
   * The frames this chunk completes. Linear in the bytes: a chunk that ends no frame is only
   * appended (never rescanned with what came before), so a 16 MB event in 64 KB chunks costs
   * what its bytes cost, not the square of them.
   */
  push(chunk: Uint8Array): Array<SseFrame> {
    if (this.overflowed) return []
    return this.take(this.decode(chunk), chunk.byteLength)
  }

  private take(decoded: string, size: number): Array<SseFrame> {
    let text = decoded
    if (this.heldCR) {
      text = "\r" + text
      this.heldCR = false
    }
    if (text.includes("\r")) {
      // A "\r" at the very end may be the first half of a "\r\n" split across chunks: normalising
      // it now would turn that one line end into two (a blank line, a false frame end). Hold it.
      if (text.endsWith("\r")) {
        this.heldCR = true
        text = text.slice(0, -1)
      }
      text = text.replace(/\r\n?/g, "\n")
    }
    if (text === "") return []
    const endsFrame = (this.endsWithNewline && text.charCodeAt(0) === 10) || text.includes("\n\n")
    this.endsWithNewline = text.charCodeAt(text.length - 1) === 10
    if (!endsFrame) {
      if (this.head.length < PENDING_HEAD) this.head = headOf(this.head + text.slice(0, PENDING_HEAD))
      this.buffer += text
      this.bufferBytes += size
      if (this.bufferBytes > this.maxEventBytes) this.overflow()
      return []
    }
    const buffer = this.buffer + text
    const frames: Array<SseFrame> = []
    let start = 0
    let end: number
    while ((end = buffer.indexOf("\n\n", start)) >= 0) {
      // Blank lines between frames: skipped here, so a frame's text starts at its first field.
      while (buffer.charCodeAt(start) === 10 && start < end) start++
      const frameText = buffer.slice(start, end + 2)
      start = end + 2
      if (!isBlank(frameText)) frames.push(parseFrame(frameText))
    }
    this.buffer = start === 0 ? buffer : buffer.slice(start)
    this.bufferBytes = this.buffer.length
    this.head = headOf(this.buffer.slice(0, PENDING_HEAD))
    if (this.bufferBytes > this.maxEventBytes) this.overflow()
    return frames
  }

  private overflow(): void {
    this.overflowed = true
    this.buffer = ""
    this.bufferBytes = 0
    this.head = ""
  }

  /** A final frame without its blank line still counts (some servers end that way). */
  flush(): Array<SseFrame> {
    if (this.overflowed) return []
    const rest = (this.buffer + (this.heldCR ? "\r" : "") + this.decode(undefined)).replace(/\r\n?/g, "\n").trim()
    this.buffer = ""
    this.bufferBytes = 0
    this.head = ""
    this.heldCR = false
    return rest === "" ? [] : [parseFrame(`${rest}\n\n`)]
  }
}

export const sseFrames = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<SseFrame, E, R> =>
  Stream.mapAccum(bytes, () => new SseDecoder(), (decoder, chunk) => [decoder, decoder.push(chunk)] as const, {
    onHalt: (decoder) => decoder.flush()
  })

/** One Responses event as a frame: `event:` line (as the real API sends) plus one-line JSON data. */
export const encodeEvent = (event: { readonly type: string; readonly [field: string]: unknown }): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/**
 * An event's data as a JSON object, or undefined when it is none (a comment, `[DONE]`, a broken
 * frame). A plain JSON.parse: it runs for every event a rewrite reads, and readers check each field.
 */
export const eventData = (data: string): Record<string, unknown> | undefined => {
  if (data === "" || data === "[DONE]") return undefined
  try {
    const json = JSON.parse(data) as unknown
    return typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** Whether a `content-type` names an event stream (`text/event-stream`, parameters such as a charset allowed). */
export const isEventStream = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === "text/event-stream"
}

/** An SSE comment: ignored by every parser, keeps proxies and idle timers from closing the stream. */
export const keepAliveComment = ": keep-alive\n\n"
