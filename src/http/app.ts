/**
 * One request, start to end: dispatch it, map every failure to the envelope in one place (typed
 * errors exhaustively, defects as 500s that do not leak internals), write the reply, then one log
 * line and one metric. The request's scope spans the whole reply, so what a handler acquires
 * (slots, the upstream connection) is released once the last byte is written, or the client left.
 */
import type { ServerResponse } from "node:http"
import { Cause, Context, Effect, Exit, FiberRef, HashMap, Scope } from "effect"
import type { GatewayError } from "../domain/errors.js"
import { AccessLog } from "../observability/accessLog.js"
import { type Envelope, envelopeOf, envelopeReply, internalError, type RouteRefused } from "./envelope.js"
import { recordRequest } from "./metrics.js"
import type { Reply, SseSink, TextReply } from "./reply.js"
import { SSE_HEADERS } from "./reply.js"
import type { ClientRequest } from "./request.js"
import { makeDispatch, routeName } from "./routes.js"

/** The error channel the app may carry: adding an error the envelope does not know fails here. */
const toEnvelope = (e: GatewayError | RouteRefused): Envelope => e._tag === "RouteRefused" ? e.envelope : envelopeOf(e)

const writeText = (res: ServerResponse, requestId: string, reply: TextReply): void => {
  res.writeHead(reply.status, {
    ...reply.headers,
    "content-type": reply.contentType,
    "content-length": Buffer.byteLength(reply.body),
    "x-request-id": requestId
  })
  res.end(reply.body)
}

const endOnce = (res: ServerResponse) => {
  if (!res.writableEnded) res.end()
}

const sinkOf = (res: ServerResponse, answered: () => void): SseSink => ({
  write: (text) => res.write(text),
  onDrain: (callback) => {
    res.once("drain", callback)
  },
  end: () => {
    endOnce(res)
    answered()
  }
})

/** Writes the reply; `answered` is called once the client has all of it (what follows is ours). */
const writeReply = (res: ServerResponse, requestId: string, reply: Reply, answered: () => void): Effect.Effect<void> => {
  if (reply._tag === "Text") {
    const write = Effect.sync(() => {
      writeText(res, requestId, reply)
      answered()
    })
    // The answer is out: a client that hangs up now does not cut the settlement short.
    return reply.after === undefined ? write : Effect.zipRight(write, Effect.uninterruptible(reply.after))
  }
  return Effect.suspend(() => {
    // Headers go out with the first frame: one write instead of two.
    res.writeHead(200, { ...SSE_HEADERS, "x-request-id": requestId })
    return Effect.ensuring(reply.run(sinkOf(res, answered)), Effect.sync(() => endOnce(res)))
  })
}

/**
 * What a request fiber starts with: its Scope in the context and its id in the log annotations.
 * The request is the root of a fiber of its own (GatewayServer forks one per request), so these
 * are set once and never restored: `Effect.scoped` and `Effect.annotateLogs` would each wrap the
 * request in an acquire/use/release that restores them, for nobody.
 */
const inRequest = <A, E, R>(
  scope: Scope.Scope,
  requestId: string,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Scope.Scope>> =>
  Effect.zipRight(
    Effect.zipRight(
      FiberRef.update(FiberRef.currentContext, Context.add(Scope.Scope, scope)),
      FiberRef.update(FiberRef.currentLogAnnotations, HashMap.set("request_id", requestId as unknown))
    ),
    effect
  ) as Effect.Effect<A, E, Exclude<R, Scope.Scope>> // the Scope is in the context from here on

/**
 * Serves requests with the route table built once. Each call serves one request on `res` as the
 * root of a fiber of its own, and never fails: by the time it ends, the client has its answer.
 */
export const makeServeRequest = Effect.zipWith(makeDispatch, AccessLog, (dispatch, accessLog) => (request: ClientRequest, res: ServerResponse) => {
  const started = Date.now()
  let status = 200
  let code = "ok"
  // The access log's duration is the client's wait, not the settlement that follows the answer.
  let answeredAt: number | undefined
  const answered = () => {
    answeredAt ??= Date.now()
  }
  const answer = (scope: Scope.Scope) =>
    inRequest(scope, request.id, Effect.exit(dispatch(request))).pipe(
      Effect.flatMap((exit) => {
        if (Exit.isSuccess(exit)) {
          if (exit.value._tag === "Text") status = exit.value.status
          return writeReply(res, request.id, exit.value, answered)
        }
        if (Cause.isInterruptedOnly(exit.cause)) return Effect.failCause(exit.cause) // the client went away: nobody to answer
        const failure = Cause.failureOption(exit.cause)
        const envelope = failure._tag === "Some" ? toEnvelope(failure.value) : internalError(request.id)
        status = envelope.status
        code = envelope.code
        const write = Effect.sync(() => writeText(res, request.id, envelopeReply(envelope)))
        return failure._tag === "Some" ? write : Effect.zipRight(Effect.logError("unhandled defect", exit.cause), write)
      })
    )
  // Once the reply is written, or the client left before it was (logged as 499, as nginx does), or
  // writing it hit a bug: the client still gets a 500, or a cut if the answer had begun. What the
  // request held (slots, the upstream connection) is given back first.
  const done = (scope: Scope.CloseableScope) => (exit: Exit.Exit<void, unknown>) => {
    let bug: Effect.Effect<void> = Effect.void
    if (Exit.isFailure(exit) && Cause.isInterrupted(exit.cause)) {
      status = 499
      code = "client_closed_request"
    } else if (Exit.isFailure(exit)) {
      const envelope = internalError(request.id)
      status = envelope.status
      code = envelope.code
      bug = Effect.zipRight(
        Effect.logError("unhandled defect while writing the response", exit.cause),
        Effect.sync(() => (res.headersSent ? res.destroy() : writeText(res, request.id, envelopeReply(envelope))))
      )
    }
    return Scope.close(scope, exit).pipe(
      Effect.zipRight(bug),
      Effect.zipRight(Effect.suspend(() => {
        recordRequest(routeName(request.path), status, code)
        return accessLog.record({
          requestId: request.id,
          method: request.method,
          path: request.path,
          status,
          code,
          durationMs: (answeredAt ?? Date.now()) - started
        })
      }))
    )
  }
  return Effect.flatMap(Scope.make(), (scope) => Effect.onExit(answer(scope), done(scope))).pipe(
    // Already answered and logged by `done`; a client that left ends the fiber as interrupted.
    Effect.catchAllCause(() => Effect.void)
  )
})

/** One request with a route table of its own (tests, embedding); the server builds the table once. */
export const serveRequest = (request: ClientRequest, res: ServerResponse) =>
  Effect.flatMap(makeServeRequest, (serve) => serve(request, res))
