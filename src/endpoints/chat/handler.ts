/**
 * POST /v1/chat/completions (and /chat/completions): the Chat Completions door, for the openai
 * SDK, the AI SDK, LangChain and the editors that speak Chat, on keys of every platform. The body
 * is checked (validate.ts) and translated to a Responses body before admission, so a field the
 * gateway cannot honour is a 400 naming it before anything is spent; then the same admitted turn
 * as every door runs, with the plan of the group's platform (openaiPlan.ts, anthropicPlan.ts).
 */
import { Effect, Result } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Settings } from "../../config/AppConfig.js"
import { makeAdmitTurn } from "../../core/admittedTurn.js"
import { InvalidRequest } from "../../domain/errors.js"
import { sessionOf } from "../../domain/session.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { chatToResponses } from "../../translate/chat/request.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { type DoorProgram, recordFor, refusedWith, turnRefused } from "../kit/door.js"
import { requestId as currentRequestId } from "../kit/request.js"
import { renderHttp } from "../kit/waitingStream.js"
import { makeAnthropicPlanner } from "./anthropicPlan.js"
import { errorFrames, KEEP_ALIVE_FRAME } from "./frames.js"
import { makeOpenAIPlanner } from "./openaiPlan.js"
import type { ChatTurnRequest } from "./plan.js"
import { chatPolicy } from "./policy.js"
import { validateChatBody } from "./validate.js"

/** The Chat request and its Responses translation, or the 400 that names what cannot be expressed. */
const readChat = (json: unknown): Result.Result<ChatTurnRequest, InvalidRequest> =>
  Result.flatMap(validateChatBody(json), (request) =>
    Result.match(chatToResponses(request.body), {
      onFailure: (e) => Result.fail(new InvalidRequest({ code: "unsupported_parameter", message: e.message, param: e.param })),
      onSuccess: (responses) => Result.succeed({ ...request, responses })
    }))

export const makeChatHandler = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const admit = yield* makeAdmitTurn
  const planOpenAI = yield* makeOpenAIPlanner
  const planAnthropic = yield* makeAnthropicPlanner

  const handler: DoorProgram = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = yield* currentRequestId
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    const who = recordFor("chat", principal)
    const { rawBody, chat } = yield* refusedWith(who)(Effect.gen(function*() {
      const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
      const chat = yield* Effect.fromResult(readChat(yield* parseJson(rawBody)))
      return { rawBody, chat }
    }))
    const record = { ...who, model: chat.model }
    const planner = principal.group.platform === "openai" ? planOpenAI : planAnthropic
    // The session from the Responses form: its stable prefix (system messages, first user message).
    const session = sessionOf(principal.key.id, request.headers, chat.responses)
    const turn = yield* admit({
      requestId,
      principal,
      policy: chatPolicy(chat),
      session,
      plan: ({ budget, metricModel }) =>
        planner({ requestId, principal, request: chat, rawBody, metricModel, budget, clientHeaders: request.headers, session }),
      render: (plan, answer) =>
        renderHttp({
          stream: chat.stream,
          json: plan.json,
          frames: plan.stream,
          waiting: {
            model: chat.model,
            requestId,
            keepAliveMillis: settings.scheduling.keepAliveMillis,
            drainDeadline: lifecycle.drainDeadline,
            keepAlive: KEEP_ALIVE_FRAME,
            failed: (code, message) => errorFrames(code, message)
          }
        })(answer)
    }).pipe(Effect.mapError(turnRefused(record)))
    return { response: turn.answer, record: { ...record, turn: turn.facts } }
  })
  return handler
})
