/**
 * Moves an upstream SSE answer to the client: each upstream chunk is turned into client frames by
 * `onChunk` (the passthrough rewrite or the Messages translation, both synchronous) and written to
 * the client at once. While the client's buffer is full the upstream is paused, so a slow client
 * slows its own upstream instead of filling the gateway's memory.
 *
 * It ends when the upstream body ends, fails, or the drain deadline passes, and says which; it
 * never fails. Interrupting it (the client left) stops reading; the request scope then aborts the
 * upstream request.
 */
import { Cause, Effect, Stream } from "effect"
import type { SseSink } from "../http/reply.js"
import type { LifecycleShape } from "../services/Lifecycle.js"
import { SseDecoder, type SseFrame } from "../sse/codec.js"
import type { BodySource, UpstreamResponse } from "../upstream/Upstream.js"

export type PumpEnd =
  | { readonly _tag: "Ended" }
  | { readonly _tag: "Failed"; readonly message: string; readonly defect?: unknown }
  | { readonly _tag: "Draining" }

const ENDED: PumpEnd = { _tag: "Ended" }
const DRAINING: PumpEnd = { _tag: "Draining" }

/** The fast path: a push source, no fiber work per chunk. */
const pumpSource = (
  source: BodySource,
  sink: SseSink,
  onChunk: (chunk: Uint8Array) => string,
  lifecycle: LifecycleShape
) =>
  Effect.async<PumpEnd>((resume) => {
    let done = false
    let stopDrainWatch = () => {}
    const finish = (end: PumpEnd) => {
      if (done) return
      done = true
      stopDrainWatch()
      source.unlisten()
      resume(Effect.succeed(end))
    }
    const resumeSource = () => {
      if (!done) source.resume()
    }
    source.listen({
      data: (chunk) => {
        if (done) return
        let out: string
        try {
          out = onChunk(chunk)
        } catch (defect) {
          // A bug in the rewrite: thrown from a listener it would take the process down.
          return finish({ _tag: "Failed", message: "The gateway failed to forward the stream", defect })
        }
        if (out !== "" && !sink.write(out)) {
          source.pause()
          sink.onDrain(resumeSource)
        }
      },
      end: () => finish(ENDED),
      error: (failure) => finish({ _tag: "Failed", message: failure.message })
    })
    // Last: past the deadline already, this finishes at once (and cleans up) before returning.
    if (!done) {
      stopDrainWatch = lifecycle.onDrainDeadline(() => finish(DRAINING))
      if (done) stopDrainWatch()
    }
    return Effect.sync(() => {
      done = true
      stopDrainWatch()
      source.unlisten()
    })
  })

/** Any other upstream (simulator, test layers): its byte Stream, with the same backpressure. */
const pumpStream = (
  response: UpstreamResponse,
  sink: SseSink,
  onChunk: (chunk: Uint8Array) => string,
  lifecycle: LifecycleShape
): Effect.Effect<PumpEnd> =>
  response.body.pipe(
    Stream.runForEach((chunk): Effect.Effect<void, PumpEnd> => {
      let out: string
      try {
        out = onChunk(chunk)
      } catch (defect) {
        return Effect.fail({ _tag: "Failed", message: "The gateway failed to forward the stream", defect })
      }
      return out === "" || sink.write(out) ? Effect.void : Effect.async<void>((resume) => sink.onDrain(() => resume(Effect.void)))
    }),
    Effect.as(ENDED),
    Effect.catchAll((e): Effect.Effect<PumpEnd> =>
      Effect.succeed(e._tag === "UpstreamFailed" ? { _tag: "Failed", message: e.message } : e)
    ),
    Effect.race(Effect.as(lifecycle.drainDeadline, DRAINING))
  )

export const pumpUpstream = (
  response: UpstreamResponse,
  sink: SseSink,
  onChunk: (chunk: Uint8Array) => string,
  lifecycle: LifecycleShape
): Effect.Effect<PumpEnd> =>
  response.source !== undefined
    ? pumpSource(response.source, sink, onChunk, lifecycle)
    : pumpStream(response, sink, onChunk, lifecycle)

/** A pump that stopped on a bug in the rewrite still ended the client's stream; the bug is logged here. */
const logPumpDefect = (end: PumpEnd): Effect.Effect<void> =>
  end._tag === "Failed" && end.defect !== undefined
    ? Effect.logError("stream rewrite failed", Cause.die(end.defect))
    : Effect.void

/** Why a stream ended before the upstream finished it, as its closing `response.failed` says. */
export interface EarlyEnd {
  readonly code: string
  readonly message: string
}

export const SHUTTING_DOWN: EarlyEnd = {
  code: "server_shutting_down",
  message: "The gateway is restarting; please retry"
}

const earlyEndOf = (end: PumpEnd): EarlyEnd | undefined =>
  end._tag === "Ended" ? undefined : end._tag === "Draining" ? SHUTTING_DOWN : { code: "server_error", message: end.message }

export interface FrameHandlers {
  /** The client's text for these upstream frames (synchronous: it runs in the pump's listener). */
  readonly frames: (frames: ReadonlyArray<SseFrame>) => string
  /** The closing frames: `early` says why the stream stopped, undefined when the upstream ended it. */
  readonly finish: (early: EarlyEnd | undefined) => string
  /** Runs however the stream ends, the client leaving included (settlement). */
  readonly settle: Effect.Effect<void>
}

/**
 * An upstream SSE answer written to the client whole: decoded into frames, rewritten by `frames`,
 * closed by `finish`, settled by `settle`. Never fails.
 */
export const pumpFrames = (
  response: UpstreamResponse,
  sink: SseSink,
  lifecycle: LifecycleShape,
  handlers: FrameHandlers
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const decoder = new SseDecoder()
    return pumpUpstream(response, sink, (chunk) => handlers.frames(decoder.push(chunk)), lifecycle).pipe(
      Effect.flatMap((end) => {
        const early = earlyEndOf(end)
        const tail = (early === undefined ? handlers.frames(decoder.flush()) : "") + handlers.finish(early)
        if (tail !== "") sink.write(tail)
        // The stream is complete for the client; settling need not keep it waiting.
        sink.end()
        return logPumpDefect(end)
      }),
      Effect.ensuring(handlers.settle)
    )
  })
