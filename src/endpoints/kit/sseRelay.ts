/**
 * An upstream SSE answer as the client's stream: Stream stages over the upstream's byte Stream.
 * Each element is one upstream pull (a non-empty array of every read the upstream body had ready),
 * decoded into frames and rewritten by a synchronous step (the passthrough bookkeeping or a
 * translation) into a collector (src/endpoints/kit/eventOut.ts), whose take is one element for the
 * client: SSE bytes for the HTTP doors, the events' data for a WebSocket turn.
 *
 * The stages, over coarse elements (one per upstream pull, never one per frame or byte):
 * - `mapArray`: decode the pull's reads (their frames guarded: kit/frameGuard.ts) and rewrite
 *   them into one step; a step is the last when the drain deadline has passed, an event grew past
 *   the size limit or the rewrite's `halt` said so (asked after each read);
 * - `takeUntil`: stop pulling the upstream after the last step;
 * - `concat`: when the upstream ended by itself, flush its unfinished last frame and close;
 * - `catchCause`: when it failed (or the rewrite threw), close with the reason;
 * - `filterMap`: drop steps that collected nothing (a read that completed no frame).
 *
 * The stream never fails: it ends when the upstream body ends or fails, or at the drain deadline,
 * and `finish` closes it with what the client needs (a terminal event unless the upstream already
 * sent its own). Past the deadline it ends at the next thing the upstream body does; the HTTP
 * upstream ends its open bodies at the deadline, so a silent upstream does not hold a stream open.
 * Backpressure is the platform's: it pulls the next element only when the client's socket has
 * room, and the upstream body is pull-based. A client that leaves interrupts the pull (no
 * `finish`); the request's scope then aborts the upstream request.
 */
import { Cause, Effect, Option, Result, Stream } from "effect"
import type { UpstreamFailed } from "../../domain/errors.js"
import { SseDecoder, type SseFrame } from "../../domain/sse.js"
import { type Collector, type EventOut, SseBytes } from "./eventOut.js"

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

/** The frame an upstream read left open: what arrived of an event not yet whole. */
export interface OpenFrame {
  /** Its bytes so far, about (0 between frames). */
  readonly pendingBytes: number
  /** Its first characters (its `event:` line, or the start of its data). */
  readonly pendingHead: string
}

export interface FrameRewrite {
  /**
   * What every upstream frame passes before `frames` reads it (kit/frameGuard.ts: credentials
   * redacted); none: frames as decoded.
   */
  readonly guard?: ((frame: SseFrame) => SseFrame) | undefined
  /** These upstream frames, rewritten into `out` (synchronous, pure but for the rewrite's own state). */
  readonly frames: (frames: ReadonlyArray<SseFrame>, out: EventOut) => void
  /** The closing events: `early` says why the stream stopped, undefined when the upstream ended it. */
  readonly finish: (early: EarlyEnd | undefined, out: EventOut) => void
  /**
   * Asked after each upstream read, with the frame it left open: a reason to end the stream now
   * (its running cost, an event still arriving included, passed the key's limit).
   */
  readonly halt?: ((open: OpenFrame) => EarlyEnd | undefined) | undefined
}

/** One upstream pull's element for the client (none when it collected nothing); `last` stops the relay after it. */
interface Step<O> {
  readonly value: O | undefined
  readonly last: boolean
}

const toValue = <O>(step: Step<O>): Result.Result<O, undefined> =>
  step.value === undefined ? Result.fail(undefined) : Result.succeed(step.value)

/**
 * The client's stream for an upstream SSE body, collected by `collector` (one per stream).
 * `pastDrainDeadline` says whether running streams must end now (shutdown; Lifecycle); an upstream
 * event larger than `maxEventBytes` ends the stream with the rewrite's closing events
 * (`upstream_error`) rather than growing the gateway's memory.
 */
export const relay = <O>(
  body: Stream.Stream<Uint8Array, UpstreamFailed>,
  rewrite: FrameRewrite,
  collector: () => Collector<O>,
  pastDrainDeadline: () => boolean,
  maxEventBytes = Infinity
): Stream.Stream<O> =>
  Stream.suspend(() => {
    const decoder = new SseDecoder(maxEventBytes)
    const out = collector()
    /** The relay stopped before the upstream ended (deadline, oversized event): nothing follows. */
    let stopped = false

    const { guard, halt } = rewrite
    /** Decoded frames as the rewrite may read them (the decoder's own array, guarded in place). */
    const guarded = (frames: Array<SseFrame>): Array<SseFrame> => {
      if (guard !== undefined) for (let i = 0; i < frames.length; i++) frames[i] = guard(frames[i]!)
      return frames
    }

    /** The closing events, after what the upstream still owed (`tail`, when it ended by itself). */
    const close = (early: EarlyEnd | undefined, tail: Array<SseFrame> = []): Step<O> => {
      if (pastDrainDeadline()) early = SHUTTING_DOWN
      if (early === undefined) rewrite.frames(guarded(tail), out)
      rewrite.finish(early, out)
      return { value: out.take(), last: true }
    }

    /** One upstream pull. A throw in the rewrite is a defect of the stream, closed by `onCause`. */
    const step = (reads: ReadonlyArray<Uint8Array>): Step<O> => {
      if (pastDrainDeadline()) {
        stopped = true
        return close(SHUTTING_DOWN)
      }
      for (const read of reads) {
        rewrite.frames(guarded(decoder.push(read)), out)
        if (decoder.overflowed) {
          stopped = true
          return close({ code: "upstream_error", message: `An upstream event is larger than MAX_SSE_EVENT_BYTES (${maxEventBytes} bytes)` })
        }
        // Asked per read, the open frame included: one giant event is cut while it arrives, not
        // relayed whole and counted after.
        const halted = halt?.(decoder)
        if (halted !== undefined) {
          stopped = true
          return close(halted)
        }
      }
      return { value: out.take(), last: false }
    }

    /** The upstream ended by itself: its unfinished last frame counts, then the close. */
    const ended = Stream.suspend(() => {
      if (stopped) return Stream.empty
      return Stream.succeed(close(undefined, pastDrainDeadline() ? [] : decoder.flush()))
    })

    const onCause = (cause: Cause.Cause<UpstreamFailed>): Stream.Stream<Step<O>> => {
      // Interrupted only (the client left): no failure to type, the interruption goes on.
      if (Cause.hasInterruptsOnly(cause)) return Stream.failCause(cause as Cause.Cause<never>)
      const failure = Cause.findErrorOption(cause)
      if (Option.isSome(failure)) return Stream.sync(() => close({ code: "server_error", message: failure.value.message }))
      // A bug in the rewrite (or the upstream body): the client's stream is still closed properly, the bug logged.
      return Stream.fromEffect(Effect.map(Effect.logError("stream rewrite failed", Cause.die(Cause.squash(cause))), () => close(FORWARD_FAILED)))
    }

    return body.pipe(
      Stream.mapArray((reads) => [step(reads)] as const),
      Stream.takeUntil((s) => s.last),
      Stream.concat(ended),
      Stream.catchCause(onCause),
      Stream.filterMap(toValue)
    )
  })

const sseBytes = () => new SseBytes()

/** The client's SSE body for an upstream SSE body (the HTTP doors). */
export const relaySse = (
  body: Stream.Stream<Uint8Array, UpstreamFailed>,
  rewrite: FrameRewrite,
  pastDrainDeadline: () => boolean,
  maxEventBytes = Infinity
): Stream.Stream<Uint8Array> => relay(body, rewrite, sseBytes, pastDrainDeadline, maxEventBytes)
