/**
 * Where a relayed stream's events go. A rewrite (the passthrough bookkeeping, a translation) says
 * what each event is; the door's collector says what it becomes on its wire: SSE text (the HTTP
 * doors) or one text message per event (the Responses WebSocket transport, which sends each
 * event's data alone). So a stream is decoded once, from the upstream, whatever the door.
 */
import type { SseFrame } from "../../domain/sse.js"

export interface EventOut {
  /** An upstream frame passed on as it came: its bytes kept on SSE, its data on WebSocket. */
  frame(frame: SseFrame): void
  /** An event of ours, or one rewritten: its type and its JSON text. */
  event(type: string, data: string): void
}

/** An EventOut that hands over what it collected since the last `take` (undefined: nothing). */
export interface Collector<O> extends EventOut {
  take(): O | undefined
}

/** SSE text, as received where frames pass through, `event:` and `data:` lines for our events. */
export class SseText implements Collector<string> {
  private text = ""
  frame(frame: SseFrame): void {
    this.text += frame.text
  }
  event(type: string, data: string): void {
    this.text += `event: ${type}\ndata: ${data}\n\n`
  }
  take(): string | undefined {
    const text = this.text
    if (text === "") return undefined
    this.text = ""
    return text
  }
}

const encoder = new TextEncoder()

/** SSE bytes: the HTTP doors' body elements. */
export class SseBytes implements Collector<Uint8Array> {
  private readonly text = new SseText()
  frame(frame: SseFrame): void {
    this.text.frame(frame)
  }
  event(type: string, data: string): void {
    this.text.event(type, data)
  }
  take(): Uint8Array | undefined {
    const text = this.text.take()
    return text === undefined ? undefined : encoder.encode(text)
  }
}

/**
 * Each event's data alone: the WebSocket transport's messages. Frames without data (comments,
 * keep-alives) and the `[DONE]` sentinel are not events.
 */
export class EventData implements Collector<ReadonlyArray<string>> {
  private items: Array<string> = []
  frame(frame: SseFrame): void {
    if (frame.data !== "" && frame.data !== "[DONE]") this.items.push(frame.data)
  }
  event(_type: string, data: string): void {
    this.items.push(data)
  }
  take(): ReadonlyArray<string> | undefined {
    if (this.items.length === 0) return undefined
    const items = this.items
    this.items = []
    return items
  }
}

/** Collectors, one per stream. */
export const sseBytes = (): Collector<Uint8Array> => new SseBytes()
export const eventData = (): Collector<ReadonlyArray<string>> => new EventData()
