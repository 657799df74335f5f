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
import { RateLimits } from "../../services/rateLimits/RateLimits.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { sessionOf } from "../../domain/session.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { type DoorProgram, type DoorRecord, Refused, recordFor, refusedWith, turnRefused } from "../kit/door.js"
import { json, rawJson } from "../kit/reply.js"
import { requestId as currentRequestId } from "../kit/request.js"
import { answerJson } from "../kit/upstreamAnswer.js"
import { answerOf, makeUpstreamCaller } from "../../core/upstreamCall.js"
import { renderHttp } from "../kit/waitingStream.js"
import { makeAnthropicPlanner } from "./anthropicPlan.js"
import { errorFrame, PING_FRAME } from "./events.js"
import { makeCountSlots } from "./countSlots.js"
import { countMessagesTokens } from "./localCount.js"
import { makeOpenAIPlanner } from "./openaiPlan.js"
import { makeChatPlanner } from "./chatPlan.js"
import { messagesPolicy } from "./policy.js"
import { type MessagesBodyKind, validateMessagesBody } from "./validate.js"
import { type Attempt, type TurnFacts, unsettled } from "../../core/turnFacts.js"
import { currentRequestSpan } from "../../observability/tracing.js"

export const makeMessagesHandlers = Effect.gen(function*() {
  const settings = yield* Settings
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const admit = yield* makeAdmitTurn
  const call = yield* makeUpstreamCaller
  const planAnthropic = yield* makeAnthropicPlanner
  const planOpenAI = yield* makeOpenAIPlanner
  const planChat = yield* makeChatPlanner
  const rateLimits = yield* RateLimits
  const countSlot = makeCountSlots(settings.countTokensConcurrencyPerKey)

  /** The key: what both routes read first. */
  const authenticated = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const principal = yield* refusedWith(undefined)(authenticate(keys, request, { allowExpired: false }))
    return { request, principal, who: recordFor("messages", principal) }
  })

  /** The body and its checks, refused with `who`. */
  const readBody = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, who: DoorRecord, kind: MessagesBodyKind) {
    const rawBody = yield* refusedWith(who)(readBodyText(request, settings.maxBodyBytes))
    const validated = yield* refusedWith(who)(
      Effect.flatMap(parseJson(rawBody), (body) => Effect.fromResult(validateMessagesBody(body, kind)))
    )
    const record: DoorRecord = { ...who, model: validated.model }
    return { record, rawBody, validated }
  })

  const readRequest = Effect.flatMap(authenticated, ({ principal, request, who }) =>
    Effect.map(readBody(request, who, "create"), (read) => ({ request, principal, ...read })))

  const messages: DoorProgram = Effect.gen(function*() {
    const { principal, rawBody, record, request, validated } = yield* readRequest
    const requestId = yield* currentRequestId
    const platform = principal.group.platform
    const planner = platform === "openai" ? planOpenAI : platform === "openai_chat" ? planChat : planAnthropic
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
   * Not billed and no turn (no slot of the key's), but a request under the per-minute limits like
   * any other: charged as one request of no tokens, before the body is read. An Anthropic group
   * asks its upstream, whose answers say nothing of the account's health for real traffic (its
   * count_tokens limits are its own); an OpenAI group counts here with the o200k tokenizer, at
   * most COUNT_TOKENS_CONCURRENCY_PER_KEY counts of a key at once (countSlots.ts).
   */
  const countTokens: DoorProgram = Effect.gen(function*() {
    const { principal, request, who } = yield* authenticated
    const limits = yield* refusedWith(who)(rateLimits.admit(principal, () => 0))
    const facts = (attempts: ReadonlyArray<Attempt>): TurnFacts => ({ ...unsettled(attempts), headers: limits.headers })
    const admitted: DoorRecord = { ...who, turn: facts([]) }
    // No count_tokens on OpenAI's APIs nor on Chat servers: counted here.
    if (principal.group.platform === "openai" || principal.group.platform === "openai_chat") {
      return yield* Effect.scoped(Effect.gen(function*() {
        yield* refusedWith(admitted)(countSlot(principal.key.id))
        const { record, validated } = yield* readBody(request, admitted, "count_tokens")
        const tokens = yield* countMessagesTokens(validated.body)
        return { response: json({ input_tokens: tokens }), record }
      }))
    }
    const { rawBody, record, validated } = yield* readBody(request, admitted, "count_tokens")
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
      span: yield* currentRequestSpan,
      reportsHealth: false
    }, false).pipe(
      Effect.flatMap(answerOf),
      Effect.mapError((failed) => new Refused({ error: failed.error, record: { ...record, turn: facts(failed.attempts) } }))
    )
    const counted = { ...record, turn: facts(answer.attempts) }
    const { text } = yield* refusedWith(counted)(answerJson(answer))
    return { response: rawJson(text), record: counted }
  })

  return { messages, countTokens } as const
})
