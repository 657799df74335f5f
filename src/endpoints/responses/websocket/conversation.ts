/**
 * What a connection keeps for `previous_response_id`: its last response's id and the full
 * input behind it plus the output items it produced. A continuation naming that id is expanded to
 * the full input before it goes upstream, so both platforms (passthrough and the Messages
 * translation) serve it as an ordinary HTTP request. Only the latest response is kept, as OpenAI
 * does; it is dropped when a turn fails, when it grows past `maxBytes`, or when it is older than
 * `maxAgeMillis`. A response too large to keep is remembered by id only, so that naming it is told why.
 */

export interface ConversationLimits {
  /**
   * The serialised transcript may not exceed this (WEBSOCKET_MAX_TRANSCRIPT_BYTES, at most the request
   * body limit: it must fit in one). It bounds the memory a connection holds between its turns.
   */
  readonly maxBytes: number
  readonly maxAgeMillis: number
}

interface Last {
  readonly id: string
  /** The full input of the last response. */
  readonly input: ReadonlyArray<unknown>
  /** Its `response.output_item.done` events as sent: parsed only if a turn continues from it. */
  readonly output: ReadonlyArray<string>
  /** About the JSON length of input and output, to bound what is kept without serialising it again. */
  readonly bytes: number
  readonly at: number
}

export type Expansion =
  | {
    readonly _tag: "Expanded"
    readonly body: Record<string, unknown>
    /** The full input the turn sends: what it continued from, then its own. */
    readonly input: ReadonlyArray<unknown>
    /** About the JSON length of `input`. */
    readonly bytes: number
  }
  | {
    readonly _tag: "NotFound"
    readonly id: string
    /** Set when `id` was the last response, not kept because its transcript was larger than `maxBytes`. */
    readonly tooLarge?: { readonly bytes: number; readonly maxBytes: number }
  }

/** A create body's `input` as items: a string is one user message. */
export const inputItems = (input: unknown): ReadonlyArray<unknown> =>
  input === undefined || input === null
    ? []
    : typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : [input]

/** The item of an `output_item.done` event's data (undefined when it has none). */
const itemOf = (data: string): unknown => {
  try {
    return (JSON.parse(data) as { item?: unknown }).item
  } catch {
    return undefined
  }
}

export class Conversation {
  private last: Last | undefined
  /** The last response when it was too large to keep. */
  private dropped: { readonly id: string; readonly bytes: number } | undefined

  constructor(private readonly limits: ConversationLimits) {}

  /** The id a continuation may name now, if any. */
  lastResponseId(now: number): string | undefined {
    const last = this.current(now)
    return last?.id
  }

  /**
   * The body to send for a create: as it came when it names no previous response; with the kept
   * transcript before its input when it names the last one; NotFound for any other id. `ownBytes`
   * is about the size of the create's own input (what it continues from was measured when kept).
   */
  expand(body: Record<string, unknown>, previousResponseId: string | undefined, now: number, ownBytes: number): Expansion {
    const own = inputItems(body["input"])
    if (previousResponseId === undefined) return { _tag: "Expanded", body, input: own, bytes: ownBytes }
    const last = this.current(now)
    if (last === undefined || last.id !== previousResponseId) {
      const dropped = this.dropped
      return dropped !== undefined && dropped.id === previousResponseId
        ? { _tag: "NotFound", id: previousResponseId, tooLarge: { bytes: dropped.bytes, maxBytes: this.limits.maxBytes } }
        : { _tag: "NotFound", id: previousResponseId }
    }
    const input = [...last.input]
    for (const done of last.output) {
      const item = itemOf(done)
      if (item !== undefined) input.push(item)
    }
    for (const item of own) input.push(item)
    return { _tag: "Expanded", body: { ...body, input }, input, bytes: last.bytes + ownBytes }
  }

  /**
   * A response completed: it becomes the one to continue from (unless it is too big to keep).
   * `output` holds its `response.output_item.done` events' data, as sent.
   */
  completed(id: string, turn: { readonly input: ReadonlyArray<unknown>; readonly bytes: number }, output: ReadonlyArray<string>, now: number): void {
    let bytes = turn.bytes
    for (const done of output) bytes += done.length
    const tooLarge = bytes > this.limits.maxBytes
    this.last = tooLarge ? undefined : { id, input: turn.input, output, bytes, at: now }
    this.dropped = tooLarge ? { id, bytes } : undefined
  }

  /** A turn failed: what it continued from is dropped, the client starts over with full input. */
  failed(): void {
    this.last = undefined
    this.dropped = undefined
  }

  /** Bytes kept (for tests and metrics). */
  get heldBytes(): number {
    return this.last?.bytes ?? 0
  }

  private current(now: number): Last | undefined {
    if (this.last !== undefined && now - this.last.at > this.limits.maxAgeMillis) this.last = undefined
    return this.last
  }
}
