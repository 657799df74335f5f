/**
 * One Responses WebSocket connection: client frames in, one turn at a time, events out as text
 * frames. Each turn is an HTTP bridge (§4.4): the create body, expanded with the connection's
 * transcript when it continues the last response, runs through the gateway as a streaming POST
 * (`runTurn`), so authentication, policy, limits, slots, scheduling, failover and settlement are
 * exactly the HTTP path's, and the SSE answer's events become frames in the same order with the
 * same payloads.
 *
 * Everything the connection holds lives in its Scope: the writer, the turn worker, the timers. A
 * client that closes (or drops) mid-turn interrupts the turn, whose own Scope then gives its slot
 * back and settles what was produced.
 */
import { Clock, Effect, Fiber, Metric, Queue, Schedule, type Scope, Stream } from "effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Socket from "effect/socket/Socket"
import type { Envelope } from "../../../domain/envelope.js"
import { SseDecoder } from "../../../domain/sse.js"
import { websocketConnections, websocketTurns } from "../../../observability/metrics.js"
import { Conversation, type ConversationLimits } from "./conversation.js"
import { connectionLimitReached, errorEvent, parseClientFrame, previousResponseNotFound, warmUpEvents } from "./protocol.js"

/** Runs one create body as a streaming POST through the gateway, in the turn's Scope. */
export type TurnRunner = (body: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

export interface ConnectionOptions {
  readonly runTurn: TurnRunner
  readonly conversation: ConversationLimits
  /** The connection's maximum age; then `websocket_connection_limit_reached` and a close. */
  readonly maxAgeMillis: number
  /** While a turn runs, a frame at least this often (Codex's idle timer ignores pings). */
  readonly keepAliveMillis: number
  /** Client frames waiting behind the running turn before more are refused. */
  readonly queueLimit: number
  /** Completes when the gateway begins shutting down. */
  readonly shutdown: Effect.Effect<void>
}

type Work =
  | { readonly _tag: "Frame"; readonly text: string }
  | { readonly _tag: "Refuse"; readonly envelope: Envelope }
  | { readonly _tag: "Close"; readonly code: number; readonly reason: string; readonly envelope?: Envelope }

const KEEP_ALIVE = JSON.stringify({ type: "keepalive" })
const decoder = new TextDecoder()

/** The event type, read from the head of the frame without parsing it (the type comes first). */
const TYPE = /^\s*\{\s*"type"\s*:\s*"([^"]+)"/
const typeOf = (frame: string): string | undefined => TYPE.exec(frame.slice(0, 80))?.[1]

const turnCounter = (outcome: string) => Metric.withAttributes(websocketTurns, { outcome })

export const serveConnection = (socket: Socket.Socket, options: ConnectionOptions): Effect.Effect<void, Socket.SocketError, Scope.Scope> =>
  Effect.gen(function*() {
    // Acquiring the reader completes the handshake (the 101); the writer writes to that connection.
    const reader = yield* socket.reader
    const { write } = yield* socket.writer
    const work = yield* Queue.unbounded<Work>()
    const conversation = new Conversation(options.conversation)
    // Time is the Clock's: the keep-alive timer and the transcript's age run on it.
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    let lastSent = now()
    const send = (frame: string) =>
      Effect.suspend(() => {
        lastSent = now()
        return write(frame)
      })

    /** One turn: the bridge's answer as frames; the transcript kept when it completes. */
    const bridge = (body: Record<string, unknown>, input: ReadonlyArray<unknown>) =>
      Effect.scoped(Effect.gen(function*() {
        // Keep-alives from the request on, as Codex's idle timer runs: the answer's headers wait for
        // the upstream's first byte (up to the first-byte timeout, per failover attempt).
        lastSent = now()
        const keepAlive = yield* Effect.forkScoped(
          Effect.repeat(
            Effect.suspend(() => now() - lastSent >= options.keepAliveMillis ? send(KEEP_ALIVE) : Effect.void),
            { schedule: Schedule.spaced(Math.max(1, Math.floor(options.keepAliveMillis / 2))) }
          )
        )
        const response = yield* options.runTurn(JSON.stringify(body))
        if (response.body._tag !== "Stream") {
          yield* Fiber.interrupt(keepAlive)
          // An answer before any event (401, 429, 400...): the envelope as an error event.
          const text = response.body._tag === "Uint8Array"
            ? decoder.decode(response.body.body)
            : response.body._tag === "Raw" && typeof response.body.body === "string"
            ? response.body.body
            : ""
          conversation.failed()
          yield* Metric.update(turnCounter("refused"), 1)
          return yield* send(errorEvent(envelopeOfBody(response.status, text, response.headers)))
        }
        // The gateway's one SSE decoder; a frame is an event's data alone (§3): comments
        // (keep-alives), frames without data and the `[DONE]` sentinel are not sent.
        const frames = new SseDecoder()
        const output: Array<unknown> = []
        let outcome = "incomplete"
        let ended = false
        yield* response.body.stream.pipe(
          Stream.mapError(() => "cut" as const),
          Stream.runForEach((chunk) =>
            Effect.forEach(frames.push(chunk), ({ data: frame }) => {
              if (frame === "" || frame === "[DONE]") return Effect.void
              const type = typeOf(frame)
              if (type === "response.output_item.done") {
                const item = (JSON.parse(frame) as { item?: unknown }).item
                if (item !== undefined) output.push(item)
              } else if (type === "response.completed") {
                const id = (JSON.parse(frame) as { response?: { id?: unknown } }).response?.id
                if (typeof id === "string") {
                  conversation.completed(id, input, output, now())
                  outcome = "completed"
                }
              } else if (type === "response.failed" || type === "response.incomplete" || type === "error") {
                conversation.failed()
                outcome = type === "response.incomplete" ? "incomplete" : "failed"
                ended = true
              }
              if (type === "response.completed") ended = true
              return send(frame)
            }, { discard: true })),
          Effect.catch(() => Effect.void)
        )
        yield* Fiber.interrupt(keepAlive)
        if (outcome !== "completed") conversation.failed()
        // The gateway's streams always end with a terminal event; should one not, the client must
        // still hear that the turn is over, or Codex waits for its idle timeout.
        if (!ended) yield* send(errorEvent(streamEnded))
        yield* Metric.update(turnCounter(outcome), 1)
      }))

    const handle = (item: Work): Effect.Effect<boolean, Socket.SocketError> => {
      if (item._tag === "Close") {
        return Effect.as(
          Effect.andThen(
            item.envelope === undefined ? Effect.void : send(errorEvent(item.envelope)),
            write(new Socket.CloseEvent(item.code, item.reason))
          ),
          false
        )
      }
      if (item._tag === "Refuse") return Effect.as(send(errorEvent(item.envelope)), true)
      const frame = parseClientFrame(item.text)
      if (frame._tag === "Ignore") return Effect.succeed(true)
      if (frame._tag === "Refuse") return Effect.as(send(errorEvent(frame.envelope)), true)
      const expansion = conversation.expand(frame.body, frame.previousResponseId, now())
      if (expansion._tag === "NotFound") {
        conversation.failed()
        return Effect.as(send(errorEvent(previousResponseNotFound(expansion.id))), true)
      }
      if (frame.warmUp) {
        // Answered here: no upstream, no billing; its id is chainable with the input as transcript.
        const at = now()
        const warm = warmUpEvents(expansion.body, at)
        conversation.completed(warm.id, expansion.input, [], at)
        return Effect.as(
          Effect.andThen(Effect.forEach(warm.frames, send, { discard: true }), Metric.update(turnCounter("warm_up"), 1)),
          true
        )
      }
      return Effect.as(bridge(expansion.body, expansion.input), true)
    }

    // The worker: one item at a time, in order, until a Close is handled.
    const serveWork: Effect.Effect<void, Socket.SocketError> = Effect.suspend(() =>
      Effect.flatMap(Queue.take(work), (item) => Effect.flatMap(handle(item), (open) => open ? serveWork : Effect.void))
    )
    const worker = yield* Effect.forkScoped(serveWork)

    // Frames are queued synchronously, so they are handled in the order they came; one turn runs,
    // `queueLimit` creates may wait behind it, and one more is answered, in its turn, with a 429
    // (never in the middle of another turn's frames). A client that keeps on regardless is closed.
    const onFrame = (data: string | Uint8Array): void => {
      const waiting = Queue.sizeUnsafe(work)
      if (waiting >= options.queueLimit * 4) {
        Queue.offerUnsafe(work, { _tag: "Close", code: 1008, reason: "too many messages waiting" })
        return
      }
      if (typeof data !== "string") Queue.offerUnsafe(work, { _tag: "Refuse", envelope: binaryRefused })
      else if (waiting >= options.queueLimit) Queue.offerUnsafe(work, { _tag: "Refuse", envelope: tooManyQueued(options.queueLimit) })
      else Queue.offerUnsafe(work, { _tag: "Frame", text: data })
    }
    /** Reads client frames until the client closes (the pull then fails). */
    const reading: Effect.Effect<never, Socket.SocketError> = Effect.forever(
      Effect.map(reader.pull, (frames) => {
        for (const frame of frames) onFrame(frame)
      })
    )

    // Age and shutdown end the connection after the running turn (the drain deadline ends that one).
    yield* Effect.forkScoped(Effect.andThen(
      Effect.sleep(options.maxAgeMillis),
      Queue.offer(work, { _tag: "Close", code: 1000, reason: "connection limit reached", envelope: connectionLimitReached(options.maxAgeMillis) })
    ))
    yield* Effect.forkScoped(Effect.andThen(
      options.shutdown,
      Queue.offer(work, { _tag: "Close", code: 1001, reason: "server shutting down" })
    ))

    yield* Metric.modify(websocketConnections, 1)
    yield* Effect.addFinalizer(() => Metric.modify(websocketConnections, -1))
    // Reading ends when the client closes; the worker ends when it closed the socket itself.
    yield* Effect.raceFirst(reading, Fiber.join(worker))
  })

const streamEnded: Envelope = {
  status: 502,
  type: "api_error",
  code: "upstream_stream_ended",
  message: "The response ended without a terminal event",
  param: null
}

const binaryRefused: Envelope = {
  status: 400,
  type: "invalid_request_error",
  code: "invalid_message",
  message: "Binary messages are not supported; send JSON text messages",
  param: null
}

const tooManyQueued = (limit: number): Envelope => ({
  status: 429,
  type: "rate_limit_error",
  code: "too_many_pending_messages",
  message: `At most ${limit} messages may wait behind the running response on one connection`,
  param: null
})

/** The envelope an HTTP answer carried, as an error event's content (its status and headers kept). */
const envelopeOfBody = (status: number, text: string, headers: Readonly<Record<string, string>>): Envelope => {
  let error: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text) as { error?: Record<string, unknown> }
    error = parsed.error ?? {}
  } catch {
    // not JSON: described by the status alone
  }
  const limits = Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith("x-ratelimit-") || k === "retry-after"))
  return {
    status,
    type: typeof error["type"] === "string" ? error["type"] : "api_error",
    code: typeof error["code"] === "string" ? error["code"] : "upstream_error",
    message: typeof error["message"] === "string" ? error["message"] : `The request failed with status ${status}`,
    param: typeof error["param"] === "string" ? error["param"] : null,
    ...(Object.keys(limits).length === 0 ? {} : { headers: limits })
  }
}
