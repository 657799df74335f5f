import { HttpServerResponse } from "@effect/platform"
import { Stream } from "effect"

/** An SSE response from a stream of already-encoded frames; the stream must not fail. */
export const sseResponse = (frames: Stream.Stream<string>) =>
  HttpServerResponse.stream(Stream.encodeText(frames), {
    contentType: "text/event-stream",
    headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
  })
