/**
 * POST /v1/responses (and its aliases): the Responses door over HTTP. It reads the request (key,
 * subpath, body), hands the admitted turn (src/core/admittedTurn.ts) the policy facts and the
 * route's plan, and encodes the answer as JSON or SSE.
 *
 * A stream request whose turn must wait for a slot gets its SSE response at once and waits inside
 * it (keep-alives, then the answer or a response.failed). When slots are free nothing waits and no
 * extra fiber or timer is made.
 */
import type { Scope } from "effect"
import { Effect } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../../config/AppConfig.js"
import { makeAdmitTurn, type TurnPolicy } from "../../core/admittedTurn.js"
import type { GatewayError } from "../../domain/errors.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { sseBytes } from "../kit/eventOut.js"
import { sse } from "../kit/reply.js"
import { pathOf, requestId as currentRequestId } from "../kit/request.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { requestFacts } from "../../observability/requestFacts.js"
import { sessionOf } from "../../services/scheduler/session.js"
import { makeMessagesPlanner } from "./messagesPath.js"
import { makeOpenAIPlanner } from "./openaiPath.js"
import { moderationTexts, roughInputTokens, wantsImageGeneration } from "./policy.js"
import { responsesSubpath } from "./subpath.js"
import { type ResponsesRequest, validateResponsesBody } from "./validate.js"
import { waitingStream } from "./waitingStream.js"

export type ResponsesHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

/** What admission reads of a Responses request. */
export const responsesPolicy = (request: ResponsesRequest): TurnPolicy => ({
  model: request.model,
  stream: request.stream,
  texts: () => moderationTexts(request.body),
  wantsImageGeneration: wantsImageGeneration(request.body),
  roughInputTokens: () => roughInputTokens(request.body)
})

/**
 * The handler, with its services resolved once when the gateway is built: a request pays for its
 * own steps, not for looking up a dozen services.
 */
export const makeResponsesHandler = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const admit = yield* makeAdmitTurn
  const planOpenAI = yield* makeOpenAIPlanner
  const planMessages = yield* makeMessagesPlanner

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
    const planner = principal.group.platform === "openai" ? planOpenAI : planMessages

    const session = sessionOf(principal.key.id, request.headers, validated.body)
    const { answer, plan } = yield* admit({
      requestId,
      principal,
      policy: responsesPolicy(validated),
      session,
      facts,
      plan: ({ budget, metricModel }) =>
        planner({ requestId, principal, request: validated, rawBody, subpath, metricModel, budget, facts, clientHeaders: request.headers, session })
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
