/**
 * One Responses WebSocket connection: client frames in, one turn at a time, events out as text
 * frames. Each turn's create body, expanded with the connection's transcript when it continues the
 * last response, runs through the admitted turn like an HTTP request (`runTurn`, ./turn.ts), so
 * authentication, policy, limits, slots, scheduling, failover and settlement are the HTTP path's;
 * its events become frames in the upstream's order with the same payloads.
 *
 * Everything the connection holds lives in its Scope: the writer, the turn worker, the timers. A
 * client that closes (or drops) mid-turn interrupts the turn, whose own Scope then gives its slot
 * back and settles what was produced.
 */
import { Clock, Effect, Fiber, Metric, Queue, Schedule, type Scope, Stream } from "effect"
import { isReadonlyArrayNonEmpty as isNonEmpty } from "effect/Array"
import * as Socket from "effect/socket/Socket"
import type { Envelope } from "../../../domain/envelope.js"
import { websocketConnections, websocketTurns } from "../../../observability/metrics.js"
import { Conversation, type ConversationLimits, type Expansion } from "./conversation.js"
import {
  connectionLimitReached,
  errorEvent,
  parseClientFrame,
  previousResponseNotFound,
  warmUpEvents,
  withPreviousResponseId
} from "./protocol.js"
import type { TurnRunner } from "./turn.js"
import type { WarmUpAdmission } from "./warmUp.js"

export interface ConnectionOptions {
  readonly runTurn: TurnRunner
  /** Whether a warm-up may be answered (the key's limits count it as a request). */
  readonly admitWarmUp: WarmUpAdmission
  readonly conversation: ConversationLimits
  /** The connection's maximum age; then `websocket_connection_limit_reached` and a close. */
  readonly maxAgeMillis: number
  /** While a turn runs, a frame at least this often (Codex's idle timer ignores pings). */
  readonly keepAliveMillis: number
  /** Client frames waiting behind the running turn before more are refused. */
  readonly queueLimit: number
  /** Completes when the gateway begins shutting down. */
  readonly shutdown: Effect.Effect<void>
  /** Holds the connection's writes while a batch is framed, so it leaves in one write (the TCP socket's cork). */
  readonly holdWrites?: { readonly cork: () => void; readonly uncork: () => void } | undefined
}

type Expanded = Extract<Expansion, { readonly _tag: "Expanded" }>

type Work =
  | { readonly _tag: "Frame"; readonly text: string }
  | { readonly _tag: "Refuse"; readonly envelope: Envelope }
  | { readonly _tag: "Close"; readonly code: number; readonly reason: string; readonly envelope?: Envelope }

const KEEP_ALIVE = JSON.stringify({ type: "keepalive" })

/** The event type, read from the head of the frame without parsing it (the type comes first). */
const TYPE = /^\s*\{\s*"type"\s*:\s*"([^"]+)"/
const typeOf = (frame: string): string | undefined => TYPE.exec(frame.slice(0, 80))?.[1]

/** The id of the response a `response.completed` event carries: read from its head, parsed only if not there. */
const RESPONSE_ID = /"response"\s*:\s*\{\s*"id"\s*:\s*"([^"\\]+)"/
const responseIdOf = (frame: string): string | undefined => {
  const head = RESPONSE_ID.exec(frame.slice(0, 200))?.[1]
  if (head !== undefined) return head
  try {
    const id = (JSON.parse(frame) as { response?: { id?: unknown } }).response?.id
    return typeof id === "string" ? id : undefined
  } catch {
    return undefined
  }
}

/** The turn counter per outcome, made once (a counter with attributes is a new metric key each time). */
const turnCounters = new Map<string, Metric.Counter<number>>()
const turnCounter = (outcome: string) => {
  let counter = turnCounters.get(outcome)
  if (counter === undefined) turnCounters.set(outcome, counter = Metric.withAttributes(websocketTurns, { outcome }))
  return counter
}

export const serveConnection = Effect.fnUntraced(function*(socket: Socket.Socket, options: ConnectionOptions): Effect.fn.Return<void, Socket.SocketError, Scope.Scope> {
  // Acquiring the reader completes the handshake (the 101); the writer writes to that connection.
  const reader = yield* socket.reader
  const { write, writeAll } = yield* socket.writer
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
  /**
   * Events, sent in as few TCP writes as they came: the socket is held (corked) from the first
   * event until the event loop's next turn, so events that arrive together leave together, as
   * Node's HTTP response does for an SSE body; otherwise the WebSocket library writes each event
   * with a system call of its own, the largest per-event cost of a turn (docs/decisions.md).
   */
  let holding = false
  const release = () => {
    holding = false
    options.holdWrites?.uncork()
  }
  const sendAll = (frames: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      if (!isNonEmpty(frames)) return Effect.void
      lastSent = now()
      const held = options.holdWrites
      if (held !== undefined && !holding) {
        holding = true
        held.cork()
        setImmediate(release)
      }
      return writeAll(frames)
    })
  /** Whether a turn is running: the connection's keep-alive speaks only then. */
  let turnRunning = false
  /** One turn: its events as frames; the transcript kept when it completes. */
  const turn = (expansion: Expanded, previousResponseId: string | undefined) =>
    Effect.scoped(Effect.gen(function*() {
      // Keep-alives from the request on, as Codex's idle timer runs: the first event waits for
      // the upstream's first byte (up to the first-byte timeout, per failover attempt).
      lastSent = now()
      turnRunning = true
      const progress = { terminalSent: false }
      const outcome = yield* options.runTurn(expansion.body, progress)
      if (outcome._tag === "Refused") {
        conversation.failed()
        yield* Metric.update(turnCounter("refused"), 1)
        return yield* send(errorEvent(outcome.envelope))
      }
      const output: Array<string> = []
      let result = "incomplete"
      let ended = false
      yield* Stream.runForEach(outcome.events, (upstreamFrames) => {
        // A chained turn's response names the id the client chained from (the upstream saw the transcript).
        const frames = previousResponseId === undefined
          ? upstreamFrames
          : upstreamFrames.map((frame) => withPreviousResponseId(frame, typeOf(frame), previousResponseId))
        const wasEnded = ended
        for (const frame of frames) {
          const type = typeOf(frame)
          if (type === "response.output_item.done") output.push(frame)
          else if (type === "response.completed") {
            const id = responseIdOf(frame)
            if (id !== undefined) {
              conversation.completed(id, expansion, output, now())
              result = "completed"
            }
            ended = true
          } else if (type === "response.failed" || type === "response.incomplete" || type === "error") {
            conversation.failed()
            result = type === "response.incomplete" ? "incomplete" : "failed"
            ended = true
          }
        }
        // Once the terminal event is written the client has its answer, whatever the turn does after.
        return ended && !wasEnded
          ? Effect.andThen(sendAll(frames), Effect.sync(() => void (progress.terminalSent = true)))
          : sendAll(frames)
      }).pipe(
          // A socket that failed mid-turn: the reader sees the connection end; the turn is over.
          Effect.catch(() => Effect.void)
        )
      turnRunning = false
      if (result !== "completed") conversation.failed()
      // The gateway's streams always end with a terminal event; should one not, the client must
      // still hear that the turn is over, or Codex waits for its idle timeout.
      if (!ended) yield* send(errorEvent(streamEnded))
      yield* Metric.update(turnCounter(result), 1)
    })).pipe(Effect.ensuring(Effect.sync(() => void (turnRunning = false))))
  /** A warm-up: answered here, no upstream, no billing; its id is chainable with the input as transcript. */
  const warmUp = (expansion: Expanded, previousResponseId: string | undefined) =>
    Effect.flatMap(options.admitWarmUp, (refused) => {
      if (refused !== undefined) {
        conversation.failed()
        return Effect.andThen(send(errorEvent(refused)), Metric.update(turnCounter("refused"), 1))
      }
      const at = now()
      const warm = warmUpEvents(expansion.body, at, previousResponseId)
      conversation.completed(warm.id, expansion, [], at)
      return Effect.andThen(Effect.forEach(warm.frames, send, { discard: true }), Metric.update(turnCounter("warm_up"), 1))
    })
  // One keep-alive timer per connection (not one fiber per turn): a frame whenever a running
  // turn has been silent for keepAliveMillis.
  yield* Effect.forkScoped(
    Effect.repeat(
      Effect.suspend(() => turnRunning && now() - lastSent >= options.keepAliveMillis ? send(KEEP_ALIVE) : Effect.void),
      { schedule: Schedule.spaced(Math.max(1, Math.floor(options.keepAliveMillis / 2))) }
    )
  )
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
    // The message's length measures the turn's own input (about: it holds the create's other fields too).
    const expansion = conversation.expand(frame.body, frame.previousResponseId, now(), item.text.length)
    if (expansion._tag === "NotFound") {
      conversation.failed()
      return Effect.as(send(errorEvent(previousResponseNotFound(expansion.id, expansion.tooLarge))), true)
    }
    if (frame.warmUp) return Effect.as(warmUp(expansion, frame.previousResponseId), true)
    return Effect.as(turn(expansion, frame.previousResponseId), true)
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
