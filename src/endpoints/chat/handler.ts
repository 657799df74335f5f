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
import { makePassthroughPlanner } from "./passthroughPlan.js"
import type { ChatTurnRequest } from "./plan.js"
import { chatPolicy } from "./policy.js"
import { type ChatRequest, validateChatBody } from "./validate.js"

/** A Chat request's Responses translation, or the 400 that names what cannot be expressed. */
const translated = (request: ChatRequest): Result.Result<ChatTurnRequest, InvalidRequest> =>
  Result.match(chatToResponses(request.body), {
    onFailure: (e) => Result.fail(new InvalidRequest({ code: "unsupported_parameter", message: e.message, param: e.param })),
    onSuccess: (responses) => Result.succeed({ ...request, responses })
  })

export const makeChatHandler = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const admit = yield* makeAdmitTurn
  const planOpenAI = yield* makeOpenAIPlanner
  const planAnthropic = yield* makeAnthropicPlanner
  const planPassthrough = yield* makePassthroughPlanner

  const handler: DoorProgram = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = yield* currentRequestId
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    const who = recordFor("chat", principal)
    // A Chat server takes the request as it is; the others take its Responses translation.
    const passthrough = principal.group.platform === "openai_chat"
    const { rawBody, chat } = yield* refusedWith(who)(Effect.gen(function*() {
      const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
      const validated = yield* Effect.fromResult(validateChatBody(yield* parseJson(rawBody)))
      const chat = passthrough ? { ...validated, responses: undefined } : yield* Effect.fromResult(translated(validated))
      return { rawBody, chat }
    }))
    const record = { ...who, model: chat.model }
    // The session from the Responses form where there is one: its stable prefix (system messages,
    // first user message); a passed-through request's from its own messages.
    const session = sessionOf(principal.key.id, request.headers, chat.responses ?? chat.body)
    const planner = principal.group.platform === "openai" ? planOpenAI : planAnthropic
    const turn = yield* admit({
      requestId,
      principal,
      policy: chatPolicy(chat),
      session,
      plan: ({ budget, metricModel }) => {
        const common = { requestId, principal, rawBody, metricModel, budget, clientHeaders: request.headers, session }
        return chat.responses === undefined
          ? planPassthrough({ ...common, request: chat })
          : planner({ ...common, request: { ...chat, responses: chat.responses } })
      },
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
