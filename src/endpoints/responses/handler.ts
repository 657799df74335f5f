/**
 * POST /v1/responses (and its aliases): the Responses door over HTTP. It reads the request (key,
 * subpath, body), hands the admitted turn (src/core/admittedTurn.ts) the policy facts and the
 * route's plan, and encodes the answer as JSON or SSE; it returns the answer with its record.
 *
 * A stream request whose turn must wait for a slot gets its SSE response at once and waits inside
 * it (keep-alives, then the answer or a response.failed). When slots are free nothing waits and no
 * extra fiber or timer is made.
 */
import { Effect } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Settings } from "../../config/AppConfig.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { type DoorProgram, recordFor, refusedWith, turnRefused } from "../kit/door.js"
import { sseBytes } from "../kit/eventOut.js"
import { pathOf, requestId as currentRequestId } from "../kit/request.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { isCompaction, responsesSubpath } from "./subpath.js"
import { makeResponsesTurn } from "./responsesTurn.js"
import { validateResponsesBody } from "./validate.js"
import { renderHttp } from "../kit/waitingStream.js"

/**
 * The door, with its services resolved once when the gateway is built: a request pays for its
 * own steps, not for looking up a dozen services.
 */
export const makeResponsesHandler = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const responsesTurn = yield* makeResponsesTurn

  const handler: DoorProgram = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = yield* currentRequestId
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    const who = recordFor("responses", principal)
    const { rawBody, subpath, validated } = yield* refusedWith(who)(Effect.gen(function*() {
      const subpath = yield* Effect.fromResult(responsesSubpath(pathOf(request.url)))
      const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
      const body = yield* Effect.fromResult(validateResponsesBody(yield* parseJson(rawBody)))
      // A compaction is answered in JSON whatever `stream` says: the compact endpoint does not stream.
      const validated = isCompaction(subpath) ? { ...body, stream: false } : body
      return { rawBody, subpath, validated }
    }))
    const record = { ...who, model: validated.model }
    const turn = yield* responsesTurn({
      requestId,
      principal,
      request: validated,
      rawBody,
      subpath,
      clientHeaders: request.headers,
      render: (plan, answer) =>
        renderHttp({
          stream: validated.stream,
          json: plan.json,
          frames: (ready) => plan.stream(ready, sseBytes),
          waiting: {
            model: validated.model,
            request: validated.body,
            requestId,
            keepAliveMillis: settings.scheduling.keepAliveMillis,
            drainDeadline: lifecycle.drainDeadline
          }
        })(answer)
    }).pipe(Effect.mapError(turnRefused(record)))
    return { response: turn.answer, record: { ...record, turn: turn.facts } }
  })
  return handler
})
