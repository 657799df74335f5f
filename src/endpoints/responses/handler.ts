/**
 * POST /v1/responses (and its aliases): the pipeline in DESIGN.md's order. Each step is a service
 * call or a pure policy; this file only composes them.
 *
 * Waiting for a slot (steps 11-12): a non-stream request waits before answering; a stream request
 * that must wait gets its SSE response at once and waits inside it (keep-alives, then the answer or
 * a response.failed). When slots are free nothing waits and no extra fiber or timer is made.
 */
import { Effect, Metric, Scope } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { AppConfig, Settings } from "../../config/AppConfig.js"
import { type GatewayError, ModelNotFound, PermissionDenied } from "../../domain/errors.js"
import type { Group, Principal } from "../../domain/model.js"
import { authenticate } from "../kit/auth.js"
import { parseJson, readBodyText } from "../kit/body.js"
import { afterAnswer, sse } from "../kit/reply.js"
import { pathOf, requestId as currentRequestId } from "../kit/request.js"
import { moderationFlagged, taggedCounters } from "../../observability/metrics.js"
import { KeyRepo } from "../../services/keyRepo/KeyRepo.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { Moderation, type ModerationShape } from "../../services/moderation/Moderation.js"
import { Quota } from "../../services/quota/Quota.js"
import { RateLimits } from "../../services/rateLimits/RateLimits.js"
import { requestFacts } from "../../observability/requestFacts.js"
import { traced } from "../../observability/tracing.js"
import { Scheduler } from "../../services/scheduler/Scheduler.js"
import { sessionOf } from "../../services/scheduler/session.js"
import { makeMessagesPlanner } from "./messagesPath.js"
import { makeOpenAIPlanner } from "./openaiPath.js"
import { moderationTexts, offersModel, roughInputTokens, wantsImageGeneration } from "./policy.js"
import { type Answer, answerOf, type CallError, type CallInput, makeUpstreamCaller } from "./upstreamCall.js"
import { responsesSubpath } from "./subpath.js"
import { type ResponsesRequest, validateResponsesBody } from "./validate.js"
import { waitingStream } from "./waitingStream.js"

const flaggedCounter = taggedCounters(moderationFlagged, ["group", "category"])

const moderate = (moderation: ModerationShape, group: Group, body: Record<string, unknown>) => {
  if (group.moderation === "off") return Effect.void
  return Effect.flatMap(moderation.check(moderationTexts(body)), (decision) => {
    if (decision._tag === "Allow") return Effect.void
    const counted = Metric.update(flaggedCounter(group.name, decision.category), 1)
    if (group.moderation === "observe") {
      return Effect.andThen(
        counted,
        Effect.logInfo("moderation flagged (observe mode)").pipe(
          Effect.annotateLogs({ group: group.name, category: decision.category })
        )
      )
    }
    return Effect.andThen(
      counted,
      Effect.fail(
        new PermissionDenied({
          code: "content_policy_violation",
          message: `The request was blocked by content policy (category: ${decision.category})`
        })
      )
    )
  })
}

/** Whether a record has any key (without listing them). */
const hasAny = (record: Readonly<Record<string, string>>): boolean => {
  for (const _ in record) return true
  return false
}

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
  const defaultModels = (yield* AppConfig).data.defaultModels
  const scheduler = yield* Scheduler
  const quota = yield* Quota
  const rateLimits = yield* RateLimits
  const moderation = yield* Moderation
  const lifecycle = yield* Lifecycle
  const keys = yield* KeyRepo
  const call = yield* makeUpstreamCaller
  const planOpenAI = yield* makeOpenAIPlanner
  const planMessages = yield* makeMessagesPlanner

  /**
   * Whether the request may go on: the group offers the model, moderation lets it through, image
   * generation is allowed where asked for, the money is there, and the per-minute limits admit it.
   * Gives the group's accounts (when its model list did not decide alone) and the admission.
   */
  const checkPolicy = (principal: Principal, validated: ResponsesRequest) =>
    Effect.gen(function*() {
      // A group with its own model list decides alone; only otherwise do its accounts matter here.
      const listsModels = principal.group.models !== undefined && principal.group.models.length > 0
      const accounts = listsModels ? [] : yield* scheduler.accounts(principal.group)
      if (!offersModel(principal.group, accounts, validated.model)) {
        return yield* new ModelNotFound({ model: validated.model })
      }
      yield* moderate(moderation, principal.group, validated.body)
      if (!principal.group.allowImageGeneration && wantsImageGeneration(validated.body)) {
        return yield* new PermissionDenied({
          code: "image_generation_not_allowed",
          message: "Image generation is not enabled for this group"
        })
      }
      yield* quota.check(principal)
      const limits = yield* rateLimits.admit(principal, () => roughInputTokens(validated.body))
      return { accounts, limits }
    })

  const handler: ResponsesHandler = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const requestId = yield* currentRequestId
    const principal = yield* authenticate(keys, request, { allowExpired: false })
    const facts = yield* requestFacts
    facts.keyId = principal.key.id
    facts.group = principal.group.name
    const subpath = yield* Effect.fromResult(responsesSubpath(pathOf(request.url)))
    const rawBody = yield* readBodyText(request, settings.maxBodyBytes)
    const validated = yield* Effect.fromResult(validateResponsesBody(yield* parseJson(rawBody)))
    facts.model = validated.model

    // The policy checks, one span when tracing: the model, moderation, image generation, money, limits.
    const { accounts, limits } = yield* traced(facts, "gateway.policy", checkPolicy(principal, validated))
    const listsModels = principal.group.models !== undefined && principal.group.models.length > 0
    if (hasAny(limits.headers)) facts.headers = limits.headers
    // Added before the plan's settlement, so it runs after it (a scope's finalizers run last
    // added first): the tokens the request really used are in `facts` by then.
    yield* afterAnswer(Effect.suspend(() => limits.settle((facts.inputTokens ?? 0) + (facts.outputTokens ?? 0))))
    // From here a settlement may be owed: the store keeps a marker until settle (or the request ends).
    yield* quota.track(requestId, principal, validated.model)

    // A group without a list may reach an account that serves any name: the metric labels only
    // names configured somewhere, so invented ones cannot grow the series without bound.
    const metricModel = listsModels || accounts.some((a) => a.modelMapping?.[validated.model] !== undefined) ||
        defaultModels[principal.group.platform].includes(validated.model)
      ? validated.model
      : "other"
    const input = { requestId, principal, request: validated, rawBody, subpath, metricModel, facts }
    const plan = yield* (principal.group.platform === "openai" ? planOpenAI : planMessages)(input)
    // Whatever answer is rendered is settled once the client has it (or left): exactly once.
    yield* afterAnswer(traced(facts, "gateway.settlement", plan.settle))
    const callInput: CallInput = {
      requestId,
      principal,
      model: validated.model,
      session: sessionOf(principal.key.id, request.headers, validated.body),
      build: plan.build,
      facts
    }
    // Slots taken from here on belong to the request's scope: given back when its response ends, however.
    const keySlot = yield* traced(facts, "gateway.key_slot", scheduler.acquireKeySlot(principal))

    if (validated.stream) {
      const waitInStream = (prepare: Effect.Effect<Answer, CallError>) =>
        sse(waitingStream({
          model: validated.model,
          requestId,
          keepAliveMillis: settings.scheduling.keepAliveMillis,
          prepare,
          stream: plan.stream,
          drainDeadline: lifecycle.drainDeadline
        }))
      if (keySlot._tag === "Queued") {
        // The wait runs inside the response, in a scope of its own; the account it gets is the request's.
        const scope = yield* Effect.scope
        const prepare = Effect.flatMap(keySlot.wait, () => Effect.flatMap(call(callInput, false), answerOf))
        return waitInStream(Effect.provideService(prepare, Scope.Scope, scope))
      }
      const step = yield* call(callInput, true)
      return step._tag === "Answered" ? sse(plan.stream(step.answer)) : waitInStream(step.resume)
    }

    if (keySlot._tag === "Queued") yield* keySlot.wait
    const step = yield* call(callInput, false)
    return yield* plan.json(yield* answerOf(step))
  })
  return handler
})
