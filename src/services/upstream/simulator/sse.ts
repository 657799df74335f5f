/**
 * Server-sent-event framing for simulated (or replayed) upstream streams:
 * `event: <type>\n` (optional) + `data: <one-line JSON>\n\n`.
 * Anthropic's SDK drops frames without an `event:` line; OpenAI Responses sends it too.
 */

export interface SseEncodeOptions {
  readonly eventLines: boolean
}

const eventType = (event: Record<string, unknown>): string => {
  const type = event["type"]
  return typeof type === "string" && type.length > 0 ? type : "message"
}

/** One frame. JSON.stringify never emits raw newlines, so each payload is a single `data:` line. */
export const encodeSseEvent = (event: Record<string, unknown>, options: SseEncodeOptions): string =>
  `${options.eventLines ? `event: ${eventType(event)}\n` : ""}data: ${JSON.stringify(event)}\n\n`

export const encodeSseEvents = (
  events: ReadonlyArray<Record<string, unknown>>,
  options: SseEncodeOptions
): string => events.map((event) => encodeSseEvent(event, options)).join("")
