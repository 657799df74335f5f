/**
 * POST /v1/messages (`?beta=true` too) and POST /v1/messages/count_tokens: the Anthropic Messages
 * door, for Claude Code and the Anthropic SDK, on keys of either platform. A Messages request runs
 * the same admitted turn as a Responses one (src/core/admittedTurn.ts); an Anthropic group gets it
 * passed through (anthropicPlan.ts), an OpenAI group translated both ways (openaiPlan.ts). Errors
 * are answered in Anthropic's shape by the app (src/server/app.ts names the door by its path).
 */
import { Effect } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import { Settings } from "../../config/AppConfig.js"
import { makeAdmitTurn } from "../../core/admittedTurn.js"
import { anthropicPassthroughHeaders } from "../../domain/forwardHeaders.js"
import { upstreamModel } from "../../domain/model.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { sessionOf } from "../../services/scheduler/session.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { type DoorProgram, type DoorRecord, Refused, recordFor, refusedWith, turnRefused } from "../kit/door.js"
import { json, rawJson } from "../kit/reply.js"
import { requestId as currentRequestId } from "../kit/request.js"
import { answerJson } from "../responses/openaiPath.js"
import { answerOf, makeUpstreamCaller } from "../../core/upstreamCall.js"
import { renderHttp } from "../responses/waitingStream.js"
import { makeAnthropicPlanner } from "./anthropicPlan.js"
import { errorFrame, PING_FRAME } from "./events.js"
import { countMessagesTokens } from "./localCount.js"
import { makeOpenAIMessagesPlanner } from "./openaiPlan.js"
import { messagesPolicy } from "./policy.js"
import { validateMessagesBody } from "./validate.js"
import { unsettled } from "../../core/turnFacts.js"
import { currentRequestSpan } from "../../observability/tracing.js"

export const makeMessagesHandlers = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const admit = yield* makeAdmitTurn
  const call = yield* makeUpstreamCaller
  const planAnthropic = yield* makeAnthropicPlanner
  const planOpenAI = yield* makeOpenAIMessagesPlanner

  /** The key, the body and its checks: what both routes read first. */
  const readRequest = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    const who = recordFor("messages", principal)
    const rawBody = yield* refusedWith(who)(readBodyText(request, settings.maxBodyBytes))
    const validated = yield* refusedWith(who)(Effect.flatMap(parseJson(rawBody), (body) => Effect.fromResult(validateMessagesBody(body))))
    const record: DoorRecord = { ...who, model: validated.model }
    return { request, principal, record, rawBody, validated }
  })

  const messages: DoorProgram = Effect.gen(function*() {
    const { principal, rawBody, record, request, validated } = yield* readRequest
    const requestId = yield* currentRequestId
    const planner = principal.group.platform === "openai" ? planOpenAI : planAnthropic
    const session = sessionOf(principal.key.id, request.headers, validated.body)
    const turn = yield* admit({
      requestId,
      principal,
      policy: messagesPolicy(validated, principal.group.platform),
      session,
      plan: ({ budget, metricModel }) =>
        planner({ requestId, principal, request: validated, rawBody, metricModel, budget, clientHeaders: request.headers, session }),
      render: (plan, answer) =>
        renderHttp({
          stream: validated.stream,
          json: plan.json,
          frames: plan.stream,
          // Waiting for a slot inside the stream: `ping` events meanwhile, an `error` event if the wait fails.
          waiting: {
            model: validated.model,
            requestId,
            keepAliveMillis: settings.scheduling.keepAliveMillis,
            drainDeadline: lifecycle.drainDeadline,
            keepAlive: PING_FRAME,
            failed: (code, message) => errorFrame(code, message)
          }
        })(answer)
    }).pipe(Effect.mapError(turnRefused(record)))
    return { response: turn.answer, record: { ...record, turn: turn.facts } }
  })

  /**
   * An Anthropic group asks its upstream (not billed, no slot of the key's: it is no turn); an
   * OpenAI group counts here with the o200k tokenizer.
   */
  const countTokens: DoorProgram = Effect.gen(function*() {
    const { principal, rawBody, record, request, validated } = yield* readRequest
    if (principal.group.platform === "openai") {
      const tokens = yield* countMessagesTokens(validated.body)
      return { response: json({ input_tokens: tokens }), record }
    }
    const headers = anthropicPassthroughHeaders(request.headers)
    const answer = yield* call({
      requestId: yield* currentRequestId,
      principal,
      model: validated.model,
      session: sessionOf(principal.key.id, request.headers, validated.body),
      build: (account) => {
        const model = upstreamModel(account, validated.model)
        return {
          path: "/v1/messages/count_tokens",
          body: model === validated.model ? rawBody : JSON.stringify({ ...validated.body, model }),
          stream: false,
          headers
        }
      },
      span: yield* currentRequestSpan
    }, false).pipe(
      Effect.flatMap(answerOf),
      Effect.mapError((failed) => new Refused({ error: failed.error, record: { ...record, turn: unsettled(failed.attempts) } }))
    )
    const counted = { ...record, turn: unsettled(answer.attempts) }
    const { text } = yield* refusedWith(counted)(answerJson(answer))
    return { response: rawJson(text), record: counted }
  })

  return { messages, countTokens } as const
})
