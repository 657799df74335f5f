/**
 * An upstream SSE answer as the client's SSE body: one Stream stage over the upstream's byte
 * Stream. Each element is one upstream read (a Chunk carries every read since the last pull),
 * decoded into frames and rewritten by a synchronous step (the passthrough bookkeeping or the
 * Messages translation) into one encoded element for the client.
 *
 * The stage is one Channel that reads an input, a failure or the end, rather than a pipeline of
 * combinators: measured here, `catchAllCause` + `concat` cost ~50 µs of setup per stream, a scoped
 * pull or a forked reader ~70-140 µs, `interruptWhen` ~50 µs per element; this channel costs ~20 µs
 * per stream and ~1 µs per read (docs/performance.md).
 *
 * The stream never fails: it ends when the upstream body ends or fails, or at the drain deadline,
 * and `finish` closes it with what the client needs (a `response.failed` unless the upstream
 * already sent its terminal event). Past the deadline it ends at the next thing the upstream body
 * does; the HTTP upstream ends its open bodies at the deadline, so a silent upstream does not hold
 * a stream open. Backpressure is the platform's: it pulls the next element only when the client's
 * socket has room, and the upstream body is pull-based. A client that leaves interrupts the pull;
 * the request's scope then aborts the upstream request.
 */
import { Cause, Channel, Chunk, Effect, Stream } from "effect"
import type { UpstreamFailed } from "../../domain/errors.js"
import { SseDecoder, type SseFrame } from "../../domain/sse.js"

/** Why a stream ended before the upstream finished it, as its closing `response.failed` says. */
export interface EarlyEnd {
  readonly code: string
  readonly message: string
}

export const SHUTTING_DOWN: EarlyEnd = {
  code: "server_shutting_down",
  message: "The gateway is restarting; please retry"
}

const FORWARD_FAILED: EarlyEnd = { code: "server_error", message: "The gateway failed to forward the stream" }

export interface FrameRewrite {
  /** The client's text for these upstream frames (synchronous, pure but for the rewrite's own state). */
  readonly frames: (frames: ReadonlyArray<SseFrame>) => string
  /** The closing frames: `early` says why the stream stopped, undefined when the upstream ended it. */
  readonly finish: (early: EarlyEnd | undefined) => string
}

const encoder = new TextEncoder()

type Relay = Channel.Channel<Chunk.Chunk<Uint8Array>, Chunk.Chunk<Uint8Array>, never, UpstreamFailed, unknown, unknown>

/** Writes `text` as one element (nothing for "": a read that completed no frame), then goes on with `next`. */
const writeThen = (text: string, next: Relay): Relay =>
  text === "" ? next : Channel.zipRight(Channel.write(Chunk.of(encoder.encode(text))), next)

const writeLast = (text: string): Relay => writeThen(text, Channel.void)

/**
 * The client's SSE body for an upstream SSE body. `pastDrainDeadline` says whether running streams
 * must end now (shutdown; Lifecycle); an upstream event larger than `maxEventBytes` ends the
 * stream with `response.failed` (`upstream_error`) rather than growing the gateway's memory.
 */
export const relaySse = (
  body: Stream.Stream<Uint8Array, UpstreamFailed>,
  rewrite: FrameRewrite,
  pastDrainDeadline: () => boolean,
  maxEventBytes = Infinity
): Stream.Stream<Uint8Array> =>
  Stream.suspend(() => {
    const decoder = new SseDecoder(maxEventBytes)

    /** The last element: the closing frames, after what the upstream still owed (`tail`). */
    const close = (early: EarlyEnd | undefined, tail = ""): Relay => {
      if (pastDrainDeadline()) early = SHUTTING_DOWN
      return writeLast((early === undefined ? tail : "") + rewrite.finish(early))
    }

    /** A bug in the rewrite: the client's stream is still closed properly, the bug logged. */
    const broken = (defect: unknown): Relay =>
      Channel.zipRight(Channel.fromEffect(Effect.logError("stream rewrite failed", Cause.die(defect))), close(FORWARD_FAILED))

    const relay: Relay = Channel.readWithCause({
      onInput: (reads: Chunk.Chunk<Uint8Array>) => {
        if (pastDrainDeadline()) return close(SHUTTING_DOWN)
        let text = ""
        try {
          for (const read of reads) text += rewrite.frames(decoder.push(read))
        } catch (defect) {
          return broken(defect)
        }
        if (decoder.overflowed) {
          return writeThen(text, close({ code: "upstream_error", message: `An upstream event is larger than MAX_SSE_EVENT_BYTES (${maxEventBytes} bytes)` }))
        }
        return writeThen(text, relay)
      },
      onFailure: (cause: Cause.Cause<UpstreamFailed>) => {
        // Interrupted only (the client left): no failure to type, the interruption goes on.
        if (Cause.isInterruptedOnly(cause)) return Channel.failCause(cause as Cause.Cause<never>)
        const failure = Cause.failureOption(cause)
        return failure._tag === "Some"
          ? close({ code: "server_error", message: failure.value.message })
          : broken(Cause.squash(cause))
      },
      onDone: () => {
        let tail: string
        try {
          tail = rewrite.frames(decoder.flush())
        } catch (defect) {
          return broken(defect)
        }
        return close(undefined, tail)
      }
    })
    return Stream.pipeThroughChannel(body, relay)
  })
