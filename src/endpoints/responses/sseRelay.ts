/**
 * An upstream SSE answer as the client's SSE body: Stream stages over the upstream's byte Stream.
 * Each element is one upstream pull (a non-empty array of every read the upstream body had ready),
 * decoded into frames and rewritten by a synchronous step (the passthrough bookkeeping or the
 * Messages translation) into one encoded element for the client.
 *
 * The stages, over coarse elements (one per upstream pull, never one per frame or byte):
 * - `mapArray`: decode the pull's reads and rewrite their frames into one step; a step is the last
 *   when the drain deadline has passed or an event grew past the size limit;
 * - `takeUntil`: stop pulling the upstream after the last step;
 * - `concat`: when the upstream ended by itself, flush its unfinished last frame and close;
 * - `catchCause`: when it failed (or the rewrite threw), close with the reason;
 * - `filterMap`: drop steps with no text (a read that completed no frame) and encode the rest.
 *
 * The stream never fails: it ends when the upstream body ends or fails, or at the drain deadline,
 * and `finish` closes it with what the client needs (a `response.failed` unless the upstream
 * already sent its terminal event). Past the deadline it ends at the next thing the upstream body
 * does; the HTTP upstream ends its open bodies at the deadline, so a silent upstream does not hold
 * a stream open. Backpressure is the platform's: it pulls the next element only when the client's
 * socket has room, and the upstream body is pull-based. A client that leaves interrupts the pull
 * (no `finish`); the request's scope then aborts the upstream request.
 */
import { Cause, Effect, Option, Result, Stream } from "effect"
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

/** The client's text for one upstream pull; `last` stops the relay after it. */
interface Step {
  readonly text: string
  readonly last: boolean
}

const NOTHING: Step = { text: "", last: false }

const toBytes = (step: Step): Result.Result<Uint8Array, undefined> =>
  step.text === "" ? Result.fail(undefined) : Result.succeed(encoder.encode(step.text))

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
    /** The relay stopped before the upstream ended (deadline, oversized event): nothing follows. */
    let stopped = false

    /** The closing frames, after what the upstream still owed (`tail`). */
    const close = (early: EarlyEnd | undefined, tail = ""): string => {
      if (pastDrainDeadline()) early = SHUTTING_DOWN
      return (early === undefined ? tail : "") + rewrite.finish(early)
    }

    /** One upstream pull. A throw in the rewrite is a defect of the stream, closed by `onCause`. */
    const step = (reads: ReadonlyArray<Uint8Array>): Step => {
      if (pastDrainDeadline()) {
        stopped = true
        return { text: close(SHUTTING_DOWN), last: true }
      }
      let text = ""
      for (const read of reads) text += rewrite.frames(decoder.push(read))
      if (decoder.overflowed) {
        stopped = true
        const early = { code: "upstream_error", message: `An upstream event is larger than MAX_SSE_EVENT_BYTES (${maxEventBytes} bytes)` }
        return { text: text + close(early), last: true }
      }
      return text === "" ? NOTHING : { text, last: false }
    }

    /** The upstream ended by itself: its unfinished last frame counts, then the close. */
    const ended = Stream.suspend(() => {
      if (stopped) return Stream.empty
      const tail = pastDrainDeadline() ? "" : rewrite.frames(decoder.flush())
      return Stream.succeed<Step>({ text: close(undefined, tail), last: true })
    })

    const onCause = (cause: Cause.Cause<UpstreamFailed>): Stream.Stream<Step> => {
      // Interrupted only (the client left): no failure to type, the interruption goes on.
      if (Cause.hasInterruptsOnly(cause)) return Stream.failCause(cause as Cause.Cause<never>)
      const failure = Cause.findErrorOption(cause)
      if (Option.isSome(failure)) return Stream.sync((): Step => ({ text: close({ code: "server_error", message: failure.value.message }), last: true }))
      // A bug in the rewrite (or the upstream body): the client's stream is still closed properly, the bug logged.
      return Stream.fromEffect(
        Effect.as(Effect.logError("stream rewrite failed", Cause.die(Cause.squash(cause))), { text: close(FORWARD_FAILED), last: true })
      )
    }

    return body.pipe(
      Stream.mapArray((reads) => [step(reads)] as const),
      Stream.takeUntil((s) => s.last),
      Stream.concat(ended),
      Stream.catchCause(onCause),
      Stream.filterMap(toBytes)
    )
  })
