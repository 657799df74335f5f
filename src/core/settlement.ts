/**
 * Settlement after an answer: record usage once per request id, and say what was recorded. A
 * failure here must not fail the client's answer (it has been served), so it is logged with
 * everything needed to reconcile it. With a journal (quota/journaled.ts), a settlement the store
 * cannot take is journaled instead and its cost is counted when it is written; its tokens are
 * counted now, they were served.
 * The input tokens are also counted as read from the provider's prompt cache or not, per account
 * (`settlement.account`, the account that answered) and per key, whatever the store does: the
 * upstream served them either way.
 */
import { Effect, Metric } from "effect"
import type { AnswerFacts } from "../domain/answerFacts.js"
import type { TokenUsage } from "../domain/usage.js"
import { costMicrosTotal, countInputTokens, taggedCounters, tokensTotal, unpricedRequests } from "../observability/metrics.js"
import type { Settlement } from "../domain/settlement.js"
import type { QuotaShape } from "../services/quota/Quota.js"
import type { Settled } from "./turnFacts.js"

/**
 * What an answer used: as the upstream reported it, or (a stream cut before it said) estimated;
 * with what the upstream said of the answer (its id, model, stop reason: for the request's span).
 */
export interface Metered {
  readonly usage: TokenUsage
  readonly estimated: boolean
  readonly answer?: AnswerFacts | undefined
}

/**
 * An answer rendered for the client (a door's response, a stream of its events), and how to read
 * what it used once it is over: what a plan's renderer returns and the core settles.
 */
export interface Rendered<A> {
  readonly answer: A
  /** Read once the client has the answer or left (a stream's usage is known only at its end); undefined: nothing to bill. */
  readonly usage: Effect.Effect<Metered | undefined>
}

/** A usage the upstream reported, known as the answer is rendered (with what it said of the answer). */
export const reported = (usage: TokenUsage, answer?: AnswerFacts): Effect.Effect<Metered> =>
  Effect.succeed({ usage, estimated: false, answer })

/**
 * A stream's usage at its end: `read` gives what the upstream reported, or an Effect estimating it
 * (counting tokens) when the upstream never said; that is settled and stored as estimated.
 * `answer` reads what the stream's events said of the answer, as far as they came.
 */
export const meteredAtEnd = (
  read: () => TokenUsage | Effect.Effect<TokenUsage>,
  answer?: () => AnswerFacts | undefined
): Effect.Effect<Metered> =>
  Effect.suspend(() => {
    const usage = read()
    const facts = answer?.()
    return Effect.isEffect(usage)
      ? Effect.map(usage, (u): Metered => ({ usage: u, estimated: true, answer: facts }))
      : Effect.succeed({ usage, estimated: false, answer: facts })
  })

/** The same rendering with its answer mapped (an encoder over it). */
export const mapRendered = <A, B>(rendered: Rendered<A>, f: (answer: A) => B): Rendered<B> => ({
  answer: f(rendered.answer),
  usage: rendered.usage
})

const tokensByModel = taggedCounters(tokensTotal, ["model"])
const costByGroup = taggedCounters(costMicrosTotal, ["group"])
const unpricedByModel = taggedCounters(unpricedRequests, ["model"])

/**
 * Records `settlement` through `quota`: what was recorded (the cost undefined when the store did
 * not price it now: journaled, or failed and logged).
 */
export const settleUsage = (
  quota: QuotaShape,
  settlement: Settlement,
  /** The label for `modelgate_tokens_total` and `modelgate_unpriced_requests_total` (bounded: `metricModel` in core/admittedTurn.ts). */
  metricModel: string = settlement.model
): Effect.Effect<Settled> => {
  const { principal, usage } = settlement
  const tokens = (costMicros: number | undefined): Settled => ({
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cacheReadTokens: usage.cacheReadTokens,
    cacheCreationTokens: usage.cacheCreationTokens,
    costMicros
  })
  // An estimate (a stream cut before the upstream reported usage) knows nothing of the cache.
  const cacheSplit = settlement.estimated === true ? Effect.void : countInputTokens(settlement.account, principal.key.id, usage)
  const charged = quota.settle(settlement).pipe(
    Effect.flatMap(({ cost, journaled, priceFallback }) => {
      if (journaled === true) return Effect.as(Metric.update(tokensByModel(metricModel), usage.inputTokens + usage.outputTokens), tokens(undefined))
      const counted = Effect.andThen(
        Metric.update(tokensByModel(metricModel), usage.inputTokens + usage.outputTokens),
        Metric.update(costByGroup(principal.group.name), cost)
      )
      return Effect.as(priceFallback ? Effect.andThen(counted, Metric.update(unpricedByModel(metricModel), 1)) : counted, tokens(cost))
    }),
    Effect.catchCause((cause) =>
      Effect.logError("settlement failed; reconcile this request", cause).pipe(
        Effect.annotateLogs({
          request_id: settlement.requestId,
          key: principal.key.id,
          model: settlement.model,
          input_tokens: usage.inputTokens,
          output_tokens: usage.outputTokens,
          estimated: settlement.estimated === true
        }),
        Effect.as(tokens(undefined))
      )
    )
  )
  return Effect.andThen(cacheSplit, charged)
}
