/**
 * POST /v1/messages (`?beta=true` too) and POST /v1/messages/count_tokens: the Anthropic Messages
 * door, for Claude Code and the Anthropic SDK, on keys of either platform. A Messages request runs
 * the same admitted turn as a Responses one (src/core/admittedTurn.ts); an Anthropic group gets it
 * passed through (anthropicPlan.ts), an OpenAI group translated both ways (openaiPlan.ts). Errors
 * are answered in Anthropic's shape by the app (src/server/app.ts names the door by its path).
 */
import { Effect, type Scope } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../../config/AppConfig.js"
import { makeAdmitTurn } from "../../core/admittedTurn.js"
import type { GatewayError } from "../../domain/errors.js"
import { anthropicPassthroughHeaders } from "../../domain/forwardHeaders.js"
import { upstreamModel } from "../../domain/model.js"
import { requestFacts } from "../../observability/requestFacts.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { sessionOf } from "../../services/scheduler/session.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { json, rawJson, sse } from "../kit/reply.js"
import { requestId as currentRequestId } from "../kit/request.js"
import { answerJson } from "../responses/openaiPath.js"
import { answerOf, makeUpstreamCaller } from "../../core/upstreamCall.js"
import { waitingStream } from "../responses/waitingStream.js"
import { makeAnthropicPlanner } from "./anthropicPlan.js"
import { errorFrame, PING_FRAME } from "./events.js"
import { countMessagesTokens } from "./localCount.js"
import { makeOpenAIMessagesPlanner } from "./openaiPlan.js"
import { messagesPolicy } from "./policy.js"
import { validateMessagesBody } from "./validate.js"

export type MessagesHandler = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  GatewayError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
>

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
    const principal = yield* authenticate(keys, request, { allowExpired: false })
    const facts = yield* requestFacts
    facts.door = "messages"
    facts.keyId = principal.key.id
    facts.group = principal.group.name
    const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
    const validated = yield* Effect.fromResult(validateMessagesBody(yield* parseJson(rawBody)))
    facts.model = validated.model
    return { request, principal, facts, rawBody, validated }
  })

  const messages: MessagesHandler = Effect.gen(function*() {
    const { facts, principal, rawBody, request, validated } = yield* readRequest
    const requestId = yield* currentRequestId
    const planner = principal.group.platform === "openai" ? planOpenAI : planAnthropic
    const session = sessionOf(principal.key.id, request.headers, validated.body)
    const { answer, plan } = yield* admit({
      requestId,
      principal,
      policy: messagesPolicy(validated),
      session,
      facts,
      plan: ({ budget, metricModel }) =>
        planner({ requestId, principal, request: validated, rawBody, metricModel, budget, facts, clientHeaders: request.headers, session })
    })
    if (!validated.stream) return yield* plan.json(answer._tag === "Answered" ? answer.answer : yield* answer.resume)
    if (answer._tag === "Answered") return sse(plan.stream(answer.answer))
    // Waiting for a slot inside the stream: `ping` events meanwhile, an `error` event if the wait fails.
    return sse(waitingStream({
      model: validated.model,
      requestId,
      keepAliveMillis: settings.scheduling.keepAliveMillis,
      prepare: answer.resume,
      stream: plan.stream,
      drainDeadline: lifecycle.drainDeadline,
      keepAlive: PING_FRAME,
      failed: (code, message) => errorFrame(code, message)
    }))
  })

  /**
   * An Anthropic group asks its upstream (not billed, no slot of the key's: it is no turn); an
   * OpenAI group counts here with the o200k tokenizer.
   */
  const countTokens: MessagesHandler = Effect.gen(function*() {
    const { facts, principal, rawBody, request, validated } = yield* readRequest
    if (principal.group.platform === "openai") return json({ input_tokens: yield* countMessagesTokens(validated.body) })
    const headers = anthropicPassthroughHeaders(request.headers)
    const step = yield* call({
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
      facts
    }, false)
    const { text } = yield* answerJson(yield* answerOf(step))
    return rawJson(text)
  })

  return { messages, countTokens } as const
})
