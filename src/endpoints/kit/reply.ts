/**
 * Building answers as platform responses: JSON (ours or the upstream's bytes as they came), SSE over
 * an Effect Stream, and work that follows an answer (the settlement).
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Context, Effect, Scope, type Stream } from "effect"

/** An already-serialised JSON body (passthrough keeps the upstream's bytes). */
export const rawJson = (body: string, status = 200, headers?: Readonly<Record<string, string>>) =>
  HttpServerResponse.text(body, headers === undefined ? { status, contentType: "application/json" } : { status, contentType: "application/json", headers })

export const json = (value: unknown, status = 200, headers?: Readonly<Record<string, string>>) =>
  rawJson(JSON.stringify(value), status, headers)

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

/**
 * A `text/event-stream` answer whose body is `frames`, already encoded. The stream must not fail:
 * once the headers are out, a failure can only be told to the client as a frame (response.failed).
 */
export const sse = (frames: Stream.Stream<Uint8Array>) =>
  HttpServerResponse.stream(frames, { contentType: "text/event-stream", headers: SSE_HEADERS })

/**
 * Runs `effect` once the request's answer is written (or the client left): it is a finalizer of the
 * request's Scope, which the server closes after the response, so the client does not wait for it
 * and no path (success, failure, hang-up, shutdown) skips it. Used for settlement.
 */
export const afterAnswer = (effect: Effect.Effect<void>): Effect.Effect<void, never, Scope.Scope> =>
  // Runs in the request's context (its id, facts, log annotations, span), as Effect.addFinalizer
  // would; but that merges the captured context into the closing fiber's, a copy of every service
  // of the app per finalizer. The request's context already holds all of them (it was built on the
  // server's), so it replaces the closing fiber's as it is: no copy.
  Effect.flatMap(Effect.context<Scope.Scope>(), (context) =>
    Scope.addFinalizer(Context.get(context, Scope.Scope), Effect.updateContext(effect, () => context)))
