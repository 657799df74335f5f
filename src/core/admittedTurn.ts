/**
 * The admitted turn: the one core behind every door (HTTP Responses, Responses WebSocket turns,
 * Anthropic Messages). A door decodes its request into a principal, the facts admission reads
 * (`TurnPolicy`) and a plan for the upstream call; the core runs the gateway's pipeline over them (docs/architecture.md):
 * the model check, moderation, the image and provider tool gates, balance/quota, RPM/TPM, the key's slot, scheduling
 * with failover and the upstream call; the door renders the answer (or the wait for it) for its
 * client, and the core settles what the rendering used, exactly once, after the answer. It returns
 * the rendering with the turn's facts (turnFacts.ts): values, which the door reports.
 *
 * No HTTP request is read here: what a door knows of its transport (headers to forward, the
 * session) is already in its input.
 */
import { Clock, Effect, Scope } from "effect"
import { AppConfig, Settings } from "../config/AppConfig.js"
import type { AnswerFacts } from "../domain/answerFacts.js"
import { type GatewayError, type InvalidRequest, ModelNotFound, PermissionDenied } from "../domain/errors.js"
import { offersModel, type Principal } from "../domain/model.js"
import { firstDenied, type ProviderTool } from "../domain/providerTools.js"
import { observeUpstreamLatency } from "../observability/metrics.js"
import { currentRequestSpan, traced } from "../observability/tracing.js"
import { Moderation } from "../services/moderation/Moderation.js"
import { affordable } from "../domain/spend.js"
import { Quota } from "../services/quota/Quota.js"
import { RateLimits } from "../services/rateLimits/RateLimits.js"
import { Scheduler } from "../services/scheduler/Scheduler.js"
import { afterAnswer } from "./afterAnswer.js"
import { moderate } from "./moderate.js"
import { type Metered, type Rendered, settleUsage } from "./settlement.js"
import { type Attempt, type Settled, type TurnFacts, TurnFailed, unsettled } from "./turnFacts.js"
import type { Budget, Plan } from "./plan.js"
import { type Answer, answerOf, type CallFailed, type CallInput, makeUpstreamCaller, type TurnAnswer } from "./upstreamCall.js"

/** What admission reads of a request, whatever wire format it came in. */
export interface TurnPolicy {
  readonly model: string
  readonly stream: boolean
  /** Every text a model will read (for moderation and the rough token count). */
  readonly texts: () => ReadonlyArray<string>
  readonly wantsImageGeneration: boolean
  /**
   * The tools the request has the upstream run and bill per call (web search ...), each once; the
   * group must allow each one (`allow_provider_tools`). None where the door's translation drops them.
   */
  readonly providerTools: ReadonlyArray<ProviderTool>
  /** A quick estimate of the input tokens, to admit the request under a tokens-per-minute limit. */
  readonly roughInputTokens: () => number
}

export interface TurnInput<P extends Plan, A> {
  readonly requestId: string
  readonly principal: Principal
  readonly policy: TurnPolicy
  /** The sticky-session id (domain/session.ts), from the door's session signal. */
  readonly session: string | undefined
  /** The route's plan, made once the request is admitted. */
  readonly plan: (admitted: Admission) => Effect.Effect<P, InvalidRequest>
  /**
   * The door's encoding of the answer (or of the wait for it) with the plan's renderers, and how to
   * read what it used: the core settles that once the answer is over.
   */
  readonly render: (plan: P, answer: TurnAnswer) => Effect.Effect<Rendered<A>, GatewayError>
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

/** A turn as the door rendered it, and what it came to. */
export interface Turn<A> {
  readonly answer: A
  readonly facts: TurnFacts
}

/**
 * Admits and runs a turn in the request's Scope (slots, the upstream connection and the
 * settlement belong to it). A non-stream turn always comes back `Answered` to `render`.
 */
export type AdmitTurn = <P extends Plan, A>(input: TurnInput<P, A>) => Effect.Effect<Turn<A>, TurnFailed, Scope.Scope>

const listsModels = (principal: Principal): boolean =>
  principal.group.models !== undefined && principal.group.models.length > 0

/** The facts of a turn refused before it was admitted: no headers, no attempts. */
const NOT_ADMITTED = unsettled([])

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
   * generation and provider tools are allowed where asked for, the money is there, and the
   * per-minute limits admit it.
   */
  const checkPolicy = Effect.fnUntraced(function*(principal: Principal, policy: TurnPolicy) {
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
    const denied = firstDenied(principal.group.allowProviderTools, policy.providerTools)
    if (denied !== undefined) {
      return yield* new PermissionDenied({
        code: "tool_not_allowed",
        message: `The tool '${denied}' is billed per call by the provider and is not enabled for this group`
      })
    }
    // Counted once, for whichever reads it: the input's cost and the tokens-per-minute limits.
    let rough: number | undefined
    const roughInputTokens = () => (rough ??= policy.roughInputTokens())
    const spend = yield* quota.check(principal, policy.model)
    if (spend !== undefined) yield* affordable(spend, roughInputTokens(), overdraftMicros)
    const limits = yield* rateLimits.admit(principal, roughInputTokens)
    return { accounts, limits, spend }
  })

  const admit: AdmitTurn = Effect.fnUntraced(function*(input) {
    const { policy, principal, requestId } = input
    const span = yield* currentRequestSpan
    const { accounts, limits, spend } = yield* traced(span, "gateway.policy", checkPolicy(principal, policy)).pipe(
      Effect.mapError((error) => new TurnFailed({ error, facts: NOT_ADMITTED }))
    )
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
    // The turn's own record of what it came to: the waiting path learns its attempts inside the
    // door's stream, and the settlement runs after the answer; the facts read them then.
    let attempts: ReadonlyArray<Attempt> = []
    let settled: Settled | undefined
    let answered: AnswerFacts | undefined
    const facts: TurnFacts = { headers: limits.headers, outcome: Effect.sync(() => ({ attempts, settled, answered })) }
    const noted = (answer: Answer) => {
      attempts = answer.attempts
      return answer
    }
    const callFailed = (failure: CallFailed) => {
      attempts = failure.attempts
      return failure.error
    }
    const started = yield* Clock.currentTimeMillis
    /** Records what the rendering used, for the account that answered (its prompt-cache figures). */
    const settle = (metered: Metered) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const account = attempts.at(-1)?.account
        return Effect.andThen(
          observeUpstreamLatency(now - started),
          settleUsage(quota, {
            requestId,
            principal,
            model: policy.model,
            usage: metered.usage,
            estimated: metered.estimated,
            ...(account === undefined ? {} : { account }),
            at: new Date(now)
          }, metricModel)
        )
      })
    // The door's rendering of the answer, once it has one: what it used is settled after the
    // answer. Registered before the call takes its slots, so it runs after they are given back
    // (a scope's finalizers run last added first) and a slow store never holds a slot; then the
    // per-minute limits learn the tokens the turn really took (none when nothing was rendered).
    let rendered: Rendered<unknown> | undefined
    const settlement = Effect.suspend(() => rendered === undefined ? Effect.undefined : rendered.usage).pipe(
      Effect.flatMap((metered) => {
        if (metered === undefined) return Effect.undefined
        answered = metered.answer
        return settle(metered)
      })
    )
    yield* afterAnswer(
      Effect.flatMap(traced(span, "gateway.settlement", settlement), (recorded) => {
        settled = recorded
        return limits.settle(recorded === undefined ? 0 : recorded.inputTokens + recorded.outputTokens)
      })
    )
    const turn = Effect.gen(function*() {
      const plan = yield* input.plan({ metricModel, budget })
      const callInput: CallInput = { requestId, principal, model: policy.model, session: input.session, build: plan.build, span }
      // Slots taken from here on belong to the request's scope: given back when its answer ends, however.
      const keySlot = yield* traced(span, "gateway.key_slot", scheduler.acquireKeySlot(principal))
      const calling = (mayWait: boolean) => Effect.mapError(call(callInput, mayWait), callFailed)
      const resumed = (resume: Effect.Effect<Answer, CallFailed>) => Effect.map(Effect.mapError(resume, callFailed), noted)
      let answer: TurnAnswer
      if (policy.stream && keySlot._tag === "Queued") {
        // The wait runs inside the answer (the door keeps its client informed), in the request's scope.
        const scope = yield* Effect.scope
        const resume = Effect.flatMap(keySlot.wait, () => Effect.flatMap(calling(false), (step) => resumed(answerOf(step))))
        answer = { _tag: "Waiting", resume: Effect.provideService(resume, Scope.Scope, scope) }
      } else {
        if (keySlot._tag === "Queued") yield* keySlot.wait
        const step = yield* calling(policy.stream)
        answer = step._tag === "Answered"
          ? { _tag: "Answered", answer: noted(step.answer) }
          : { _tag: "Waiting", resume: resumed(step.resume) }
      }
      const rendering = yield* input.render(plan, answer)
      rendered = rendering
      return { answer: rendering.answer, facts }
    })
    return yield* Effect.mapError(turn, (error) => new TurnFailed({ error, facts }))
  })
  return admit
})
