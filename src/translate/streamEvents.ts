/**
 * What every stream translation reads the same way: how a stream ended early, which output item an
 * upstream Responses event belongs to, and the failure a `response.failed` or `error` event reports.
 */
import { isRecord } from "./error.js"

/** How a stream ended without its terminal event: it just stopped, or it failed with a reason. */
export type StreamEnding =
  | { readonly _tag: "Eof" }
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }

/** What a translation tells its client when the upstream just stopped. */
export const UNFINISHED_MESSAGE = "The upstream stream ended before the response was complete"

export const str = (v: unknown): string => (typeof v === "string" ? v : "")

/** A Responses event's output item: its output index, or the item id from servers that leave the index out. */
export const itemKeyOf = (event: Record<string, unknown>): unknown => {
  const index = event["output_index"]
  return typeof index === "number" ? index : event["item_id"]
}

/**
 * The failure a Responses `response.failed` or `error` event reports (`code` unknown: each client
 * names it its own way), or undefined for any other event. `error` comes flat (`{code, message}`, as
 * OpenAI sends it) or nested under `error`, as some servers send it.
 */
export const responsesFailure = (event: Record<string, unknown>): { readonly code: unknown; readonly message: string } | undefined => {
  if (event["type"] === "response.failed") {
    const response = isRecord(event["response"]) ? event["response"] : {}
    const error = isRecord(response["error"]) ? response["error"] : {}
    const given = error["code"]
    return { code: given, message: str(error["message"]) || "The upstream response failed" }
  }
  if (event["type"] === "error") {
    const error = isRecord(event["error"]) ? event["error"] : event
    const given = error["code"] ?? error["type"]
    return { code: given, message: str(error["message"]) || "Upstream error" }
  }
  return undefined
}
