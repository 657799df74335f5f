/**
 * Settlement after an answer: record usage once per request id. A failure here must not fail the
 * client's answer (it has been served), so it is logged with everything needed to reconcile it.
 */
import { Effect } from "effect"
import type { Principal } from "../../domain/model.js"
import type { TokenUsage } from "../../domain/usage.js"
import { costMicrosTotal, observe, taggedCounters, tokensTotal } from "../../observability/metrics.js"
import type { QuotaShape } from "../../services/quota/Quota.js"

const tokensByModel = taggedCounters(tokensTotal, ["model"])
const costByGroup = taggedCounters(costMicrosTotal, ["group"])

export const settleUsage = (
  quota: QuotaShape,
  requestId: string,
  principal: Principal,
  model: string,
  usage: TokenUsage,
  /** The label for `modelgate_tokens_total` (bounded: see `metricModel` in handler.ts). */
  metricModel: string = model
): Effect.Effect<void> =>
  quota.settle({ requestId, principal, model, usage, at: new Date() }).pipe(
    Effect.map((cost) => {
      observe(tokensByModel(metricModel), usage.inputTokens + usage.outputTokens)
      observe(costByGroup(principal.group.name), cost)
    }),
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
