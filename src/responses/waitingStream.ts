/**
 * A stream response that starts before the request could be served: the request waits for a
 * concurrency slot inside its SSE response, with `: keep-alive` comments so clients and proxies do
 * not give up on a silent connection. When the wait ends the real frames follow; when it fails
 * (wait timed out, no account, upstream failed, shutdown) the client gets a `response.created` +
 * `response.failed` pair, never a bare cut.
 *
 * Only the waiting path builds this (one fiber, one timer); a request whose slot is free at once
 * never does. Slots stay owned by the request's scope, so they are given back however it ends.
 */
import { Cause, Effect, Exit, Fiber, Schedule, Stream } from "effect"
import type { GatewayError } from "../domain/errors.js"
import { newId } from "../domain/ids.js"
import { envelopeOf } from "../http/envelope.js"
import { encodeEvent, keepAliveComment } from "../sse/codec.js"

/** A Responses stream that failed before it produced anything: `response.created`, then `response.failed`. */
export const failedResponseFrames = (model: string, code: string, message: string): string => {
  const response = {
    id: newId("resp"),
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: "in_progress",
    model,
    output: [],
    error: null,
    incomplete_details: null
  }
  return encodeEvent({ type: "response.created", sequence_number: 0, response }) +
    encodeEvent({
      type: "response.failed",
      sequence_number: 1,
      response: { ...response, status: "failed", error: { code, message } }
    })
}

type Outcome<A> =
  | { readonly _tag: "Ready"; readonly value: A }
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }

const SHUTTING_DOWN: Outcome<never> = {
  _tag: "Failed",
  code: "server_shutting_down",
  message: "The gateway is restarting; please retry"
}

export interface WaitingStreamOptions<A> {
  readonly model: string
  readonly requestId: string
  readonly keepAliveMillis: number
  /** Waits for the slot(s) and calls upstream. */
  readonly prepare: Effect.Effect<A, GatewayError>
  /** The answer's frames, once prepared. */
  readonly frames: (value: A) => Stream.Stream<string>
  /** Completes when running streams must end (shutdown). */
  readonly drainDeadline: Effect.Effect<void>
}

export const waitingStream = <A>(options: WaitingStreamOptions<A>): Stream.Stream<string> => {
  const outcome: Effect.Effect<Outcome<A>> = Effect.exit(options.prepare).pipe(
    Effect.flatMap((exit): Effect.Effect<Outcome<A>> => {
      if (Exit.isSuccess(exit)) return Effect.succeed({ _tag: "Ready", value: exit.value })
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some") {
        const envelope = envelopeOf(failure.value)
        return Effect.succeed({ _tag: "Failed", code: envelope.code, message: envelope.message })
      }
      return Effect.as(Effect.logError("unhandled defect while waiting to stream", exit.cause), {
        _tag: "Failed",
        code: "internal_error",
        message: `Internal error; quote request id ${options.requestId} when reporting it`
      })
    }),
    Effect.race(Effect.as(options.drainDeadline, SHUTTING_DOWN)),
    // The stream body runs outside the handler's log annotations: carry the request id along.
    Effect.annotateLogs("request_id", options.requestId)
  )
  return Stream.unwrapScoped(
    Effect.map(Effect.forkScoped(outcome), (fiber) => {
      const keepAlives = Stream.make(keepAliveComment).pipe(
        Stream.concat(Stream.fromSchedule(Schedule.spaced(options.keepAliveMillis)).pipe(Stream.as(keepAliveComment))),
        Stream.interruptWhen(Fiber.await(fiber))
      )
      const rest = Stream.unwrap(
        Effect.map(Fiber.join(fiber), (o) =>
          o._tag === "Ready" ? options.frames(o.value) : Stream.make(failedResponseFrames(options.model, o.code, o.message)))
      )
      return Stream.concat(keepAlives, rest)
    })
  )
}
