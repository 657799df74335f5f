/**
 * One turn of a Responses WebSocket connection: a `response.create` body (already expanded with
 * the connection's transcript) run through the admitted turn (src/core/admittedTurn.ts) as an HTTP
 * request is: authenticated again with the handshake's key (a key disabled mid-connection is
 * refused on its next turn), validated, admitted, scheduled and settled, with a request id of its
 * own and its own access-log line (door `responses_ws`). Its events come back as the transport
 * sends them: each event's data alone, collected straight from the upstream's stream, which is
 * decoded once.
 */
import { Cause, Clock, type Context, Effect, type Scope, type Stream } from "effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Settings } from "../../../config/AppConfig.js"
import { type Envelope, envelopeHeaders } from "../../../domain/envelope.js"
import { InvalidRequest, RequestTooLarge } from "../../../domain/errors.js"
import { newRequestId } from "../../../domain/ids.js"
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../../domain/jsonDepth.js"
import { AccessLog } from "../../../observability/accessLog.js"
import { CHAT_OPERATION } from "../../../observability/tracing.js"
import { answerOf } from "../../../core/upstreamCall.js"
import { KeyRepo } from "../../../services/keyRepo/KeyRepo.js"
import { authenticate } from "../../kit/auth.js"
import { recordHeaders, recordFor, refusedWith, turnRefused } from "../../kit/door.js"
import { failureOf, openRequest } from "../../kit/edge.js"
import { eventData } from "../../kit/eventOut.js"
import { pathOf, requestContext } from "../../kit/request.js"
import { makeResponsesTurn } from "../responsesTurn.js"
import { responsesSubpath } from "../subpath.js"
import { validateResponsesBody } from "../validate.js"

export type TurnOutcome =
  /** Refused before any event (the key, the body, policy, limits, no account): one error event. */
  | { readonly _tag: "Refused"; readonly envelope: Envelope }
  /** The turn's events, each one message's text; the stream never fails and ends with a terminal event. */
  | { readonly _tag: "Events"; readonly events: Stream.Stream<ReadonlyArray<string>> }

/** What the connection tells a turn about its events as it sends them. */
export interface TurnProgress {
  /** The turn's terminal event has been written to the client: the client had its whole answer. */
  readonly terminalSent: boolean
}

/**
 * Runs one create body as a turn, holding what it takes in the turn's Scope (closed once its events
 * are sent). `progress` is read when the turn ends: a client that leaves after its terminal event
 * (Codex closes right after `response.completed`) was answered, and is not logged as gone (499).
 */
export type TurnRunner = (body: Record<string, unknown>, progress: TurnProgress) => Effect.Effect<TurnOutcome, never, Scope.Scope>

const tooDeep = new InvalidRequest({
  code: "invalid_json",
  message: `Request body nests deeper than ${MAX_JSON_DEPTH} levels`,
  param: null
})

/** The headers a refusal tells the client about: its retry-after and where its limits stand. */
export const refusalHeaders = (envelope: Envelope, limits: Readonly<Record<string, string>> | undefined) => {
  const headers: Record<string, string> = { ...limits }
  for (const [name, value] of Object.entries(envelopeHeaders(envelope))) {
    if (name === "retry-after" || name.startsWith("x-ratelimit-")) headers[name] = value
  }
  return Object.keys(headers).length === 0 ? undefined : headers
}

/** A turn's span, named as the message that starts it. */
const TURN_SPAN = "WS response.create"

const SESSION_HEADERS = ["session_id", "session-id", "conversation_id", "conversation-id"]

/**
 * The client headers a connection's turns are read with: the handshake's, less the transport's
 * own beta (`OpenAI-Beta: responses_websockets=…` describes this connection; a turn goes upstream
 * as an HTTP request, with the client's other betas only), plus a session id when the client sent
 * none: one connection is one session, kept on one account.
 */
export const turnHeaders = (handshake: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(handshake)) if (value !== undefined) headers[name] = value
  const beta = headers["openai-beta"]
  if (beta !== undefined) {
    const kept = beta.split(",").map((b) => b.trim()).filter((b) => b !== "" && !b.toLowerCase().startsWith("responses_websockets="))
    if (kept.length === 0) delete headers["openai-beta"]
    else headers["openai-beta"] = kept.join(", ")
  }
  if (!SESSION_HEADERS.some((name) => headers[name] !== undefined)) headers["session_id"] = `ws-${newRequestId()}`
  return headers
}

/** The turns of the connections the gateway serves, with their services resolved once. */
export const makeTurnRunner = Effect.fnUntraced(function*(options: { readonly tracing: boolean }) {
  const settings = yield* Settings
  const keys = yield* KeyRepo
  const accessLog = yield* AccessLog
  const responsesTurn = yield* makeResponsesTurn

  /** The runner for the connection `handshake` opened. */
  return (handshake: HttpServerRequest.HttpServerRequest): TurnRunner => {
    const path = pathOf(handshake.url)
    const headers = turnHeaders(handshake.headers)
    return (body, progress) =>
      Effect.gen(function*() {
        const id = newRequestId()
        const clock = yield* Clock.Clock
        // The turn's line, once its scope closes (its events sent, or the client gone before its
        // terminal event: a client that leaves after it, with the upstream's stream still open,
        // had its answer), made at the edge as an HTTP request's is.
        const state = yield* openRequest(accessLog, yield* Effect.scope, clock, {
          requestId: id,
          method: "POST",
          path,
          started: clock.currentTimeMillisUnsafe(),
          route: () => "responses",
          ending: () => progress.terminalSent
        })
        // Tracing: a server span per turn, a child of the connection's (the turn's steps are its children).
        const span = options.tracing
          ? yield* Effect.makeSpan(TURN_SPAN, { kind: "server", attributes: { "http.route": "/v1/responses", "url.path": path, ...CHAT_OPERATION } })
          : undefined
        state.span = span

        const run = Effect.gen(function*() {
          const principal = yield* refusedWith(undefined)(authenticate(keys, handshake, { allowExpired: false }))
          const who = recordFor("responses_ws", principal)
          const { rawBody, subpath, validated } = yield* refusedWith(who)(Effect.gen(function*() {
            const subpath = yield* Effect.fromResult(responsesSubpath(path))
            if (nestsDeeperThan(body, MAX_JSON_DEPTH)) return yield* tooDeep
            // What goes upstream: the expanded body, serialised once; as large as an HTTP body may be.
            const rawBody = JSON.stringify(body)
            if (Buffer.byteLength(rawBody) > settings.maxBodyBytes) {
              return yield* new RequestTooLarge({ limitBytes: settings.maxBodyBytes })
            }
            const validated = yield* Effect.fromResult(validateResponsesBody(body))
            return { rawBody, subpath, validated }
          }))
          const modelled = { ...who, model: validated.model }
          const turn = yield* responsesTurn({
            requestId: id,
            principal,
            request: validated,
            rawBody,
            subpath,
            clientHeaders: headers,
            render: (plan, answer) => Effect.map(answerOf(answer), (ready) => plan.stream(ready, eventData))
          }).pipe(Effect.mapError(turnRefused(modelled)))
          return { events: turn.answer, record: { ...modelled, turn: turn.facts } }
        })

        const refused = (envelope: Envelope, headers: Readonly<Record<string, string>> | undefined): TurnOutcome => {
          state.status = envelope.status
          state.code = envelope.code
          const told = refusalHeaders(envelope, headers)
          return { _tag: "Refused", envelope: told === undefined ? envelope : { ...envelope, headers: told } }
        }

        const outcome = run.pipe(
          Effect.map((served): TurnOutcome => {
            state.record = served.record
            return { _tag: "Events", events: served.events }
          }),
          Effect.catchCause((cause) => {
            if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
            const failure = failureOf(cause, id)
            state.record = failure.record
            if (!failure.defect) return Effect.succeed(refused(failure.envelope, recordHeaders(state.record)))
            return Effect.as(Effect.logError("unhandled defect", cause), refused(failure.envelope, undefined))
          })
        )
        const withRequest = requestContext(id, span)
        const inContext = Effect.updateContext(outcome, (context: Context.Context<Scope.Scope>) => withRequest(context))
        return yield* (span === undefined ? inContext : Effect.withParentSpan(inContext, span))
      })
  }
})
