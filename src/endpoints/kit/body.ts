/**
 * Reading a JSON body under a size limit. The declared length is checked before reading; a chunked
 * body is counted as it arrives. Either way the client gets a 413 envelope, never a reset.
 */
import { Readable } from "node:stream"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Effect, Stream } from "effect"
import { InvalidRequest, RequestTooLarge } from "../../domain/errors.js"
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../domain/jsonDepth.js"

/**
 * Past the limit the rest of a chunked body is still read and dropped: ending the read early makes
 * Node destroy the request, and the client would see a reset instead of the 413. A client
 * that keeps sending this much more is cut off.
 */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024

const unreadable = () => new InvalidRequest({ code: "invalid_body", message: "Failed to read request body", param: null })

/**
 * Listens on Node's IncomingMessage directly, when the platform request is backed by one (the Node
 * server): a request body is small and read once, so a Stream (with its fibers and chunk copies)
 * costs more than the body itself.
 */
const readIncoming = (source: Readable, limitBytes: number) =>
  Effect.callback<string, RequestTooLarge | InvalidRequest>((resume) => {
    let chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength
      if (size <= limitBytes) chunks.push(chunk)
      else chunks = [] // over the limit: keep nothing, only drain
      if (size > limitBytes + DRAIN_LIMIT_BYTES) {
        cleanup()
        resume(Effect.fail(new RequestTooLarge({ limitBytes })))
      }
    }
    const onEnd = () => {
      cleanup()
      resume(
        size > limitBytes
          ? Effect.fail(new RequestTooLarge({ limitBytes }))
          : Effect.succeed(Buffer.concat(chunks, size).toString("utf8"))
      )
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(unreadable()))
    }
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    return Effect.sync(cleanup)
  })

/** Any other platform request (a web Request, a test): its body Stream, counted the same way. */
const readStream = (request: HttpServerRequest.HttpServerRequest, limitBytes: number) =>
  request.stream.pipe(
    Stream.mapError(unreadable),
    Stream.runFold(() => ({ chunks: [] as Array<Uint8Array>, size: 0 }), (acc, chunk) => {
      acc.size += chunk.byteLength
      if (acc.size <= limitBytes) acc.chunks.push(chunk)
      return acc
    }),
    Effect.flatMap(({ chunks, size }) =>
      size > limitBytes ? Effect.fail(new RequestTooLarge({ limitBytes })) : Effect.succeed(Buffer.concat(chunks, size).toString("utf8"))
    )
  )

export const readBodyText = (
  request: HttpServerRequest.HttpServerRequest,
  limitBytes: number
): Effect.Effect<string, RequestTooLarge | InvalidRequest> => {
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > limitBytes) return Effect.fail(new RequestTooLarge({ limitBytes }))
  const source = request.source
  if (source instanceof Readable) return source.readableEnded ? Effect.succeed("") : readIncoming(source, limitBytes)
  return readStream(request, limitBytes)
}

export const parseJson = (text: string): Effect.Effect<unknown, InvalidRequest> => {
  if (text.trim() === "") {
    return Effect.fail(new InvalidRequest({ code: "invalid_json", message: "Request body is empty", param: null }))
  }
  return Effect.flatMap(
    Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) =>
        new InvalidRequest({
          code: "invalid_json",
          message: `Failed to parse request body as JSON: ${(e as Error).message}`,
          param: null
        })
    }),
    // Nesting far past any real request would overflow the stack of the code that walks it
    // (serialising, translating): refused here, whole, as the client's problem.
    (json) =>
      nestsDeeperThan(json, MAX_JSON_DEPTH)
        ? Effect.fail(
          new InvalidRequest({
            code: "invalid_json",
            message: `Request body nests deeper than ${MAX_JSON_DEPTH} levels`,
            param: null
          })
        )
        : Effect.succeed(json)
  )
}
