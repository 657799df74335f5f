/**
 * Building answers as platform responses: JSON (ours or the upstream's bytes as they came), SSE over
 * an Effect Stream.
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { Stream } from "effect"

/** An already-serialised JSON body (passthrough keeps the upstream's bytes). */
export const rawJson = (body: string, status = 200, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.text(body, headers === undefined ? { status, contentType: "application/json" } : { status, contentType: "application/json", headers })

export const json = (value: unknown, status = 200, headers?: Readonly<Record<string, string>>) =>
  rawJson(JSON.stringify(value), status, headers)

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

/**
 * A `text/event-stream` answer whose body is `frames`, already encoded. The stream must not fail:
 * once the headers are out, a failure can only be told to the client as a frame (response.failed).
 */
export const sse = (frames: Stream.Stream<Uint8Array>) =>
  HttpServerResponse.stream(frames, { contentType: "text/event-stream", headers: SSE_HEADERS })
