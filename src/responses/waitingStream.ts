/**
 * A stream response that starts before the request could be served: the request waits for a
 * concurrency slot inside its SSE response, with `: keep-alive` comments so clients and proxies do
 * not give up on a silent connection. When the wait ends the real frames follow; when it fails
 * (wait timed out, no account, upstream failed, shutdown) the client gets a `response.created` +
 * `response.failed` pair, never a bare cut.
 *
 * Only the waiting path builds this (one timer); a request whose slot is free at once never does. Slots stay owned by the request's scope, so they are given back however it ends.
 */
import { Cause, Effect, Exit, Fiber } from "effect"
import type { GatewayError } from "../domain/errors.js"
import { newId } from "../domain/ids.js"
import { envelopeOf } from "../http/envelope.js"
import type { SseReply } from "../http/reply.js"
import { encodeEvent, keepAliveComment } from "../sse/codec.js"
import { SHUTTING_DOWN } from "./ssePump.js"

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

const SHUTTING_DOWN_OUTCOME: Outcome<never> = { _tag: "Failed", ...SHUTTING_DOWN }

export interface WaitingStreamOptions<A> {
  readonly model: string
  readonly requestId: string
  readonly keepAliveMillis: number
  /** Waits for the slot(s) and calls upstream. */
  readonly prepare: Effect.Effect<A, GatewayError>
  /** Writes the answer's frames, once prepared. */
  readonly stream: (value: A) => SseReply["run"]
  /** Completes when running streams must end (shutdown). */
  readonly drainDeadline: Effect.Effect<void>
}

export const waitingStream = <A>(options: WaitingStreamOptions<A>): SseReply["run"] => (sink) => {
  const prepared: Effect.Effect<Outcome<A>> = Effect.exit(options.prepare).pipe(
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
    })
  )
  // The wait runs in a fiber of its own scope: however this ends (answer, shutdown, the client
  // left), closing that scope interrupts the wait and waits for it to give back what it holds
  // before the request's scope closes. A plain race would leave it running past the request.
  const outcome = Effect.scoped(
    Effect.flatMap(Effect.forkScoped(prepared), (fiber) =>
      Effect.race(Fiber.join(fiber), Effect.as(options.drainDeadline, SHUTTING_DOWN_OUTCOME)))
  )
  // Keep-alives from a plain timer while waiting: one write each, stopped however the wait ends.
  const waiting = Effect.acquireUseRelease(
    Effect.sync(() => {
      sink.write(keepAliveComment)
      return setInterval(() => sink.write(keepAliveComment), options.keepAliveMillis)
    }),
    () => outcome,
    (timer) => Effect.sync(() => clearInterval(timer))
  )
  return Effect.flatMap(waiting, (o) =>
    o._tag === "Ready"
      ? options.stream(o.value)(sink)
      : Effect.sync(() => {
        sink.write(failedResponseFrames(options.model, o.code, o.message))
      }))
}
