/**
 * The admitted turn: the one core behind every door (HTTP Responses, Responses WebSocket turns,
 * Anthropic Messages). A door decodes its request into a principal, the facts admission reads
 * (`TurnPolicy`) and a plan for the upstream call; the core runs the gateway's pipeline over them (docs/architecture.md):
 * the model check, moderation, the image gate, balance/quota, RPM/TPM, the key's slot, scheduling
 * with failover and the upstream call, and arranges exactly-once settlement after the answer. It
 * answers with the upstream's answer (or the wait for it); the door encodes that for its client.
 *
 * No HTTP request is read here: what a door knows of its transport (headers to forward, the
 * session) is already in its input.
 */
import { Effect, Scope } from "effect"
import { AppConfig, Settings } from "../config/AppConfig.js"
import { type GatewayError, type InvalidRequest, ModelNotFound, PermissionDenied } from "../domain/errors.js"
import { type Account, offersModel, type Principal } from "../domain/model.js"
import type { TokenUsage } from "../domain/usage.js"
import type { RequestFacts } from "../observability/requestFacts.js"
import { traced } from "../observability/tracing.js"
import { Moderation } from "../services/moderation/Moderation.js"
import { Quota } from "../services/quota/Quota.js"
import { RateLimits } from "../services/rateLimits/RateLimits.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import type { UpstreamRequest } from "../services/upstream/Upstream.js"
import { afterAnswer } from "./afterAnswer.js"
import { moderate } from "./moderate.js"
import { type Answer, answerOf, type CallError, type CallInput, makeUpstreamCaller } from "./upstreamCall.js"

/** What admission reads of a request, whatever wire format it came in. */
export interface TurnPolicy {
  readonly model: string
  readonly stream: boolean
  /** Every text a model will read (for moderation and the rough token count). */
  readonly texts: () => ReadonlyArray<string>
  readonly wantsImageGeneration: boolean
  /** A quick estimate of the input tokens, to admit the request under a tokens-per-minute limit. */
  readonly roughInputTokens: () => number
}

/** How the upstream is called for a turn, and the settlement of whatever answer the door renders. */
export interface RoutePlan {
  readonly build: (account: Account) => UpstreamRequest
  /** Records the usage of the rendered answer (nothing if none was): run once the client has it, or left. */
  readonly settle: Effect.Effect<void>
}

export interface TurnInput<P extends RoutePlan> {
  readonly requestId: string
  readonly principal: Principal
  readonly policy: TurnPolicy
  /** The sticky-session id (services/scheduler/session.ts), from the door's session signal. */
  readonly session: string | undefined
  readonly facts: RequestFacts
  /** The route's plan, made once the request is admitted. */
  readonly plan: (admitted: Admission) => Effect.Effect<P, InvalidRequest>
}

/** What admission decided that the plan needs. */
export interface Admission {
  /** The model as metrics label it: the requested name when configured somewhere, else "other". */
  readonly metricModel: string
  /**
   * How far the answer may run: a stream ends with `insufficient_quota` once its running cost passes
   * what the key may still spend plus the overdraft (STREAM_OVERDRAFT_USD); undefined: unbounded.
   */
  readonly budget: Budget | undefined
}

export interface Budget {
  /** Whether `usage` (what the answer has cost so far) passed the limit. */
  readonly exceeded: (usage: TokenUsage) => boolean
}

/** The upstream's answer, or (a stream whose slot was not free at once) the wait for it. */
export type TurnAnswer =
  | { readonly _tag: "Answered"; readonly answer: Answer }
  | { readonly _tag: "Waiting"; readonly resume: Effect.Effect<Answer, GatewayError> }

export interface AdmittedTurn<P extends RoutePlan> {
  readonly plan: P
  readonly answer: TurnAnswer
}

/**
 * Admits and runs a turn in the request's Scope (slots, the upstream connection and the
 * settlement belong to it). A non-stream turn always comes back `Answered`.
 */
export type AdmitTurn = <P extends RoutePlan>(input: TurnInput<P>) => Effect.Effect<AdmittedTurn<P>, GatewayError, Scope.Scope>

/** Whether a record has any key (without listing them). */
const hasAny = (record: Readonly<Record<string, string>>): boolean => {
  for (const _ in record) return true
  return false
}

const listsModels = (principal: Principal): boolean =>
  principal.group.models !== undefined && principal.group.models.length > 0

/** The core, with its services resolved once when the gateway is built. */
export const makeAdmitTurn = Effect.gen(function*() {
  const defaultModels = (yield* AppConfig).data.defaultModels
  const overdraftMicros = (yield* Settings).streamOverdraftMicros
  const scheduler = yield* Scheduler
  const quota = yield* Quota
  const rateLimits = yield* RateLimits
  const moderation = yield* Moderation
  const call = yield* makeUpstreamCaller

  /**
   * Whether the request may go on: the group offers the model, moderation lets it through, image
   * generation is allowed where asked for, the money is there, and the per-minute limits admit it.
   */
  const checkPolicy = (principal: Principal, policy: TurnPolicy) =>
    Effect.gen(function*() {
      // A group with its own model list decides alone; only otherwise do its accounts matter here.
      const accounts = listsModels(principal) ? [] : yield* scheduler.accounts(principal.group)
      if (!offersModel(principal.group, accounts, policy.model)) {
        return yield* new ModelNotFound({ model: policy.model })
      }
      yield* moderate(moderation, principal.group, policy.texts)
      if (!principal.group.allowImageGeneration && policy.wantsImageGeneration) {
        return yield* new PermissionDenied({
          code: "image_generation_not_allowed",
          message: "Image generation is not enabled for this group"
        })
      }
      const spend = yield* quota.check(principal, policy.model)
      const limits = yield* rateLimits.admit(principal, policy.roughInputTokens)
      return { accounts, limits, spend }
    })

  const admit: AdmitTurn = (input) =>
    Effect.gen(function*() {
      const { facts, policy, principal, requestId } = input
      const { accounts, limits, spend } = yield* traced(facts, "gateway.policy", checkPolicy(principal, policy))
      if (hasAny(limits.headers)) facts.headers = limits.headers
      // Added before the plan's settlement, so it runs after it (a scope's finalizers run last
      // added first): the tokens the request really used are in `facts` by then.
      yield* afterAnswer(Effect.suspend(() => limits.settle((facts.inputTokens ?? 0) + (facts.outputTokens ?? 0))))
      // From here a settlement may be owed: the store keeps a marker until settle (or the request ends).
      yield* quota.track(requestId, principal, policy.model)

      // A group without a list may reach an account that serves any name: the metric labels only
      // names configured somewhere, so invented ones cannot grow the series without bound.
      const metricModel = listsModels(principal) ||
          accounts.some((a) => a.modelMapping?.[policy.model] !== undefined) ||
          defaultModels[principal.group.platform].includes(policy.model)
        ? policy.model
        : "other"
      const budget: Budget | undefined = spend === undefined ? undefined : {
        exceeded: (usage) => spend.costOf(usage) > spend.remainingMicros + overdraftMicros
      }
      const plan = yield* input.plan({ metricModel, budget })
      // Whatever answer is rendered is settled once the client has it (or left): exactly once.
      yield* afterAnswer(traced(facts, "gateway.settlement", plan.settle))
      const callInput: CallInput = {
        requestId,
        principal,
        model: policy.model,
        session: input.session,
        build: plan.build,
        facts
      }
      // Slots taken from here on belong to the request's scope: given back when its answer ends, however.
      const keySlot = yield* traced(facts, "gateway.key_slot", scheduler.acquireKeySlot(principal))

      if (policy.stream) {
        if (keySlot._tag === "Queued") {
          // The wait runs inside the answer (the door keeps its client informed), in the request's scope.
          const scope = yield* Effect.scope
          const resume = Effect.flatMap(keySlot.wait, () => Effect.flatMap(call(callInput, false), answerOf))
          return { plan, answer: waiting(Effect.provideService(resume, Scope.Scope, scope)) }
        }
        const step = yield* call(callInput, true)
        return { plan, answer: step._tag === "Answered" ? step : waiting(step.resume) }
      }
      if (keySlot._tag === "Queued") yield* keySlot.wait
      const step = yield* call(callInput, false)
      return { plan, answer: { _tag: "Answered", answer: yield* answerOf(step) } as const }
    })
  return admit
})

const waiting = (resume: Effect.Effect<Answer, CallError>): TurnAnswer => ({ _tag: "Waiting", resume })
