/**
 * What a connection keeps for `previous_response_id` (§4.3): its last response's id and the full
 * input behind it plus the output items it produced. A continuation naming that id is expanded to
 * the full input before it goes upstream, so both platforms (passthrough and the Messages
 * translation) serve it as an ordinary HTTP request. Only the latest response is kept, as OpenAI
 * does; it is dropped when a turn fails, when it grows past `maxBytes`, or when it is older than
 * `maxAgeMillis`.
 */

export interface ConversationLimits {
  /** The serialised transcript may not exceed this (the request body limit: it must fit in one). */
  readonly maxBytes: number
  readonly maxAgeMillis: number
}

interface Last {
  readonly id: string
  /** The full input of the last response, then its output items. */
  readonly items: ReadonlyArray<unknown>
  /** JSON length of `items`, to bound what is kept without serialising it again. */
  readonly bytes: number
  readonly at: number
}

export type Expansion =
  | { readonly _tag: "Expanded"; readonly body: Record<string, unknown>; readonly input: ReadonlyArray<unknown> }
  | { readonly _tag: "NotFound"; readonly id: string }

/** A create body's `input` as items: a string is one user message. */
export const inputItems = (input: unknown): ReadonlyArray<unknown> =>
  input === undefined || input === null
    ? []
    : typeof input === "string"
    ? [{ type: "message", role: "user", content: input }]
    : Array.isArray(input)
    ? input
    : [input]

const jsonBytes = (items: ReadonlyArray<unknown>): number => Buffer.byteLength(JSON.stringify(items))

export class Conversation {
  private last: Last | undefined

  constructor(private readonly limits: ConversationLimits) {}

  /** The id a continuation may name now, if any. */
  lastResponseId(now: number): string | undefined {
    const last = this.current(now)
    return last?.id
  }

  /**
   * The body to send for a create: as it came when it names no previous response; with the kept
   * transcript before its input when it names the last one; NotFound for any other id.
   */
  expand(body: Record<string, unknown>, previousResponseId: string | undefined, now: number): Expansion {
    const own = inputItems(body["input"])
    if (previousResponseId === undefined) return { _tag: "Expanded", body, input: own }
    const last = this.current(now)
    if (last === undefined || last.id !== previousResponseId) return { _tag: "NotFound", id: previousResponseId }
    const input = [...last.items, ...own]
    return { _tag: "Expanded", body: { ...body, input }, input }
  }

  /** A response completed: it becomes the one to continue from (unless it is too big to keep). */
  completed(id: string, input: ReadonlyArray<unknown>, output: ReadonlyArray<unknown>, now: number): void {
    const items = [...input, ...output]
    const bytes = jsonBytes(items)
    this.last = bytes > this.limits.maxBytes ? undefined : { id, items, bytes, at: now }
  }

  /** A turn failed: what it continued from is dropped (§4.1), the client starts over with full input. */
  failed(): void {
    this.last = undefined
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
