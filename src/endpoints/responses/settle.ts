/**
 * Settlement after an answer: record usage once per request id. A failure here must not fail the
 * client's answer (it has been served), so it is logged with everything needed to reconcile it.
 * With a journal (quota/journaled.ts), a settlement the store cannot take is journaled instead and
 * its cost is counted when it is written; its tokens are counted now, they were served.
 * The input tokens are also counted as read from the provider's prompt cache or not, per account
 * (`facts.account`, the account that answered) and per key, whatever the store does: the upstream
 * served them either way.
 */
import { Effect, Metric } from "effect"
import { costMicrosTotal, countInputTokens, taggedCounters, tokensTotal, unpricedRequests } from "../../observability/metrics.js"
import type { RequestFacts } from "../../observability/requestFacts.js"
import type { QuotaShape, Settlement } from "../../services/quota/Quota.js"

const tokensByModel = taggedCounters(tokensTotal, ["model"])
const costByGroup = taggedCounters(costMicrosTotal, ["group"])
const unpricedByModel = taggedCounters(unpricedRequests, ["model"])

export const settleUsage = (
  quota: QuotaShape,
  settlement: Settlement,
  /** The label for `modelgate_tokens_total` and `modelgate_unpriced_requests_total` (bounded: see `metricModel` in handler.ts). */
  metricModel: string = settlement.model,
  /** Where the access log reads the tokens and the cost; its `account` labels the cache split. */
  facts?: RequestFacts
): Effect.Effect<void> => {
  const { principal, usage } = settlement
  if (facts !== undefined) {
    facts.inputTokens = usage.inputTokens
    facts.outputTokens = usage.outputTokens
  }
  // An estimate (a stream cut before the upstream reported usage) knows nothing of the cache.
  const cacheSplit = settlement.estimated === true ? Effect.void : countInputTokens(facts?.account, principal.key.id, usage)
  const charged = quota.settle(settlement).pipe(
    Effect.flatMap(({ cost, journaled, priceFallback }) => {
      if (journaled === true) return Metric.update(tokensByModel(metricModel), usage.inputTokens + usage.outputTokens)
      if (facts !== undefined) facts.costMicros = cost
      const counted = Effect.andThen(
        Metric.update(tokensByModel(metricModel), usage.inputTokens + usage.outputTokens),
        Metric.update(costByGroup(principal.group.name), cost)
      )
      return priceFallback ? Effect.andThen(counted, Metric.update(unpricedByModel(metricModel), 1)) : counted
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
        })
      )
    ),
    Effect.asVoid
  )
  return Effect.andThen(cacheSplit, charged)
}
