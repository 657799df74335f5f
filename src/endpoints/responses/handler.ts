/**
 * POST /v1/responses (and its aliases): the Responses door over HTTP. It reads the request (key,
 * subpath, body), hands the admitted turn (src/core/admittedTurn.ts) the policy facts and the
 * route's plan, and encodes the answer as JSON or SSE.
 *
 * A stream request whose turn must wait for a slot gets its SSE response at once and waits inside
 * it (keep-alives, then the answer or a response.failed). When slots are free nothing waits and no
 * extra fiber or timer is made.
 */
import { Effect, type Scope } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../../config/AppConfig.js"
import type { GatewayError } from "../../domain/errors.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { sseBytes } from "../kit/eventOut.js"
import { sse } from "../kit/reply.js"
import { pathOf, requestId as currentRequestId } from "../kit/request.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { requestFacts } from "../../observability/requestFacts.js"
import { responsesSubpath } from "./subpath.js"
import { makeResponsesTurn } from "./responsesTurn.js"
import { validateResponsesBody } from "./validate.js"
import { waitingStream } from "./waitingStream.js"

export type ResponsesHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/**
 * The handler, with its services resolved once when the gateway is built: a request pays for its
 * own steps, not for looking up a dozen services.
 */
export const makeResponsesHandler = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const responsesTurn = yield* makeResponsesTurn

  const handler: ResponsesHandler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = yield* currentRequestId
    const principal = yield* authenticate(keys, request, { allowExpired: false })
    const facts = yield* requestFacts
    facts.door = "responses"
    facts.keyId = principal.key.id
    facts.group = principal.group.name
    const subpath = yield* Effect.fromResult(responsesSubpath(pathOf(request.url)))
    const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
    const validated = yield* Effect.fromResult(validateResponsesBody(yield* parseJson(rawBody)))
    facts.model = validated.model
    const { answer, plan } = yield* responsesTurn({
      requestId,
      principal,
      request: validated,
      rawBody,
      subpath,
      clientHeaders: request.headers,
      facts
    })
    if (!validated.stream) return yield* plan.json(answer._tag === "Answered" ? answer.answer : yield* answer.resume)
    if (answer._tag === "Answered") return sse(plan.stream(answer.answer, sseBytes))
    return sse(waitingStream({
      model: validated.model,
      requestId,
      keepAliveMillis: settings.scheduling.keepAliveMillis,
      prepare: answer.resume,
      stream: (ready) => plan.stream(ready, sseBytes),
      drainDeadline: lifecycle.drainDeadline
    }))
  })
  return handler
})
