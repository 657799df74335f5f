/**
 * Reading a JSON body under a size limit. The declared length is checked before reading; a chunked
 * body is counted as it arrives. Either way the client gets a 413 envelope, never a reset.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Stream } from "effect"
import { InvalidRequest, RequestTooLarge } from "../domain/errors.js"

/**
 * Past the limit the rest of a chunked body is still read and dropped: ending the read early makes
 * the platform destroy the request, and the client would see a reset instead of the 413. A client
 * that keeps sending this much more is cut off.
 */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024

export const readBodyText = (limitBytes: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > limitBytes) return yield* new RequestTooLarge({ limitBytes })
    let chunks: Array<Uint8Array> = []
    let size = 0
    yield* request.stream.pipe(
      Stream.mapError(() => new InvalidRequest({ code: "invalid_body", message: "Failed to read request body", param: null })),
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          size += chunk.byteLength
          if (size <= limitBytes) chunks.push(chunk)
          else chunks = [] // over the limit: keep nothing, only drain
          return size <= limitBytes + DRAIN_LIMIT_BYTES
        })
      )
    )
    if (size > limitBytes) return yield* new RequestTooLarge({ limitBytes })
    return Buffer.concat(chunks, size).toString("utf8")
  })

export const parseJson = (text: string): Effect.Effect<unknown, InvalidRequest> => {
  if (text.trim() === "") {
    return Effect.fail(new InvalidRequest({ code: "invalid_json", message: "Request body is empty", param: null }))
  }
  return Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) =>
      new InvalidRequest({
        code: "invalid_json",
        message: `Failed to parse request body as JSON: ${(e as Error).message}`,
        param: null
      })
  })
}
