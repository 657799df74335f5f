/**
 * Settlement after an answer: record usage once per request id. A failure here must not fail the
 * client's answer (it has been served), so it is logged with everything needed to reconcile it.
 */
import { Effect, Metric, MetricLabel } from "effect"
import type { Principal } from "../domain/model.js"
import type { TokenUsage } from "../domain/usage.js"
import { costMicrosTotal, tokensTotal } from "../http/metrics.js"
import type { QuotaShape } from "../services/Quota.js"

// Tagging a metric builds and hashes a new key on every call: build each label's counter once.
const counterFor = (cache: Map<string, Metric.Metric.Counter<number>>, base: Metric.Metric.Counter<number>, label: string, value: string) => {
  let counter = cache.get(value)
  if (counter === undefined) {
    counter = Metric.taggedWithLabels(base, [MetricLabel.make(label, value)])
    cache.set(value, counter)
  }
  return counter
}
const tokensByModel = new Map<string, Metric.Metric.Counter<number>>()
const costByGroup = new Map<string, Metric.Metric.Counter<number>>()

export const settleUsage = (
  quota: QuotaShape,
  requestId: string,
  principal: Principal,
  model: string,
  usage: TokenUsage
): Effect.Effect<void> =>
  quota.settle({ requestId, principal, model, usage, at: new Date() }).pipe(
    Effect.tap((cost) =>
      Effect.zipRight(
        Metric.incrementBy(counterFor(tokensByModel, tokensTotal, "model", model), usage.inputTokens + usage.outputTokens),
        Metric.incrementBy(counterFor(costByGroup, costMicrosTotal, "group", principal.group.name), cost)
      )
    ),
    Effect.catchAllCause((cause) =>
      Effect.logError("settlement failed; reconcile this request", cause).pipe(
        Effect.annotateLogs({
          request_id: requestId,
          key: principal.key.id,
          model,
          input_tokens: usage.inputTokens,
          output_tokens: usage.outputTokens
        })
      )
    ),
    Effect.asVoid
  )
