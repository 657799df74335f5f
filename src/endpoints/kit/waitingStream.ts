/**
 * A stream response that starts before the request could be served: the request waits for a
 * concurrency slot inside its SSE response, with `: keep-alive` comments so clients and proxies do
 * not give up on a silent connection. When the wait ends the real frames follow; when it fails
 * (wait timed out, no account, upstream failed, shutdown) the client gets a `response.created` +
 * `response.failed` pair, never a bare cut.
 *
 * Only the waiting path builds this; a request whose slot is free at once never does. Slots stay
 * owned by the request's scope, so they are given back however it ends. `renderHttp` is how both
 * HTTP doors render a turn's answer: JSON, SSE, or this.
 */
import { Cause, Clock, Deferred, Effect, Exit, Option, Schedule, Stream } from "effect"
import { envelopeOf } from "../../domain/envelope.js"
import type { GatewayError } from "../../domain/errors.js"
import { newId } from "../../domain/ids.js"
import { responseObject } from "../../domain/responseObject.js"
import { encodeEvent, keepAliveComment } from "../../domain/sse.js"
import { SHUTTING_DOWN } from "./sseRelay.js"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { answerOf, type TurnAnswer } from "../../core/upstreamCall.js"
import { mapRendered, type Metered, type Rendered } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { sse } from "./reply.js"

/**
 * A Responses stream that failed before it produced anything: `response.created`, then
 * `response.failed`, each a complete response object echoing the client's `request`.
 */
export const failedResponseFrames = (
  model: string,
  code: string,
  message: string,
  nowMillis: number,
  request?: Record<string, unknown>
): string => {
  const fields = { id: newId("resp"), model, createdAt: Math.floor(nowMillis / 1000), ...(request === undefined ? {} : { request }) }
  return encodeEvent({ type: "response.created", sequence_number: 0, response: responseObject({ ...fields, status: "in_progress" }) }) +
    encodeEvent({
      type: "response.failed",
      sequence_number: 1,
      response: responseObject({ ...fields, status: "failed", error: { code, message } })
    })
}

type Outcome<A> =
  | { readonly _tag: "Ready"; readonly value: A }
  | { readonly _tag: "Failed"; readonly code: string; readonly message: string }

const SHUTTING_DOWN_OUTCOME: Outcome<never> = { _tag: "Failed", ...SHUTTING_DOWN }

export interface WaitingStreamOptions<A> {
  readonly model: string
  /** The client's request body, echoed by the response objects of a wait that failed. */
  readonly request?: Record<string, unknown>
  readonly requestId: string
  readonly keepAliveMillis: number
  /** Waits for the slot(s) and calls upstream. */
  readonly prepare: Effect.Effect<A, GatewayError>
  /** The answer's frames, once prepared, and how to read what they used. */
  readonly stream: (value: A) => Rendered<Stream.Stream<Uint8Array>>
  /** Completes when running streams must end (shutdown). */
  readonly drainDeadline: Effect.Effect<void>
  /**
   * The door's grammar, when it is not Responses': the frame sent while waiting (default an SSE
   * comment) and the frames of a wait that failed (default `response.created` + `response.failed`).
   */
  readonly keepAlive?: string
  readonly failed?: (code: string, message: string, nowMillis: number) => string
}

const encoder = new TextEncoder()
const bytes = (text: string) => encoder.encode(text)

/**
 * The waiting response; what it used is what its answer's frames used, none if the wait failed
 * (its answer is rendered only once the wait is over).
 */
export const waitingStream = <A>(options: WaitingStreamOptions<A>): Rendered<Stream.Stream<Uint8Array>> => {
  let usage: Effect.Effect<Metered | undefined> = Effect.undefined
  const prepared: Effect.Effect<Outcome<A>> = Effect.exit(options.prepare).pipe(
    Effect.flatMap((exit): Effect.Effect<Outcome<A>> => {
      if (Exit.isSuccess(exit)) return Effect.succeed({ _tag: "Ready", value: exit.value })
      const failure = Cause.findErrorOption(exit.cause)
      if (Option.isSome(failure)) {
        const envelope = envelopeOf(failure.value)
        return Effect.succeed({ _tag: "Failed", code: envelope.code, message: envelope.message })
      }
      return Effect.as(Effect.logError("unhandled defect while waiting to stream", exit.cause), {
        _tag: "Failed",
        code: "internal_error",
        message: `Internal error; quote request id ${options.requestId} when reporting it`
      })
    }),
    Effect.race(Effect.as(options.drainDeadline, SHUTTING_DOWN_OUTCOME))
  )
  // The wait runs in a fiber of the stream's own scope: however the stream ends (answer, shutdown,
  // the client left), closing that scope interrupts the wait, which gives back what it holds
  // before the request's scope closes.
  const frames = Stream.unwrap(Effect.gen(function*() {
    const outcome = yield* Deferred.make<Outcome<A>>()
    yield* Effect.forkScoped(Effect.flatMap(prepared, (o) => Deferred.succeed(outcome, o)))
    const keepAlive = bytes(options.keepAlive ?? keepAliveComment)
    const failed = options.failed ?? ((code, message, now) => failedResponseFrames(options.model, code, message, now, options.request))
    const keepAlives = Stream.concat(
      Stream.succeed(keepAlive),
      Stream.fromSchedule(Schedule.spaced(options.keepAliveMillis)).pipe(Stream.as(keepAlive))
    ).pipe(Stream.interruptWhen(Deferred.await(outcome)))
    const answer = Stream.unwrap(Effect.flatMap(Deferred.await(outcome), (o) => {
      if (o._tag === "Failed") return Effect.map(Clock.currentTimeMillis, (now) => Stream.succeed(bytes(failed(o.code, o.message, now))))
      const rendered = options.stream(o.value)
      usage = rendered.usage
      return Effect.succeed(rendered.answer)
    }))
    return Stream.concat(keepAlives, answer)
  }))
  return { answer: frames, usage: Effect.suspend(() => usage) }
}

/** How an HTTP door renders a turn's answer (core/admittedTurn.ts `render`). */
export interface HttpRendering {
  readonly stream: boolean
  /** A non-stream answer as the client's JSON response. */
  readonly json: (answer: Answer) => Effect.Effect<Rendered<HttpServerResponse.HttpServerResponse>, GatewayError>
  /** A stream answer's SSE frames. */
  readonly frames: (answer: Answer) => Rendered<Stream.Stream<Uint8Array>>
  /** What a stream that must wait for its slot says meanwhile, and if the wait fails. */
  readonly waiting: Omit<WaitingStreamOptions<Answer>, "prepare" | "stream">
}

/**
 * A turn's answer over HTTP: JSON, SSE at once, or (a stream whose slot was not free) an SSE
 * response that waits inside for it.
 */
export const renderHttp = (rendering: HttpRendering) =>
(answer: TurnAnswer): Effect.Effect<Rendered<HttpServerResponse.HttpServerResponse>, GatewayError> => {
  if (!rendering.stream) return Effect.flatMap(answerOf(answer), rendering.json)
  if (answer._tag === "Answered") return Effect.succeed(mapRendered(rendering.frames(answer.answer), sse))
  const waited = waitingStream({ ...rendering.waiting, prepare: answer.resume, stream: rendering.frames })
  return Effect.succeed(mapRendered(waited, sse))
}
