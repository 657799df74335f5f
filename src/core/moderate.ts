/**
 * Moderation as a group configures it: off, observe (count and log a flagged request, let it
 * through) or block (refuse it, 403 content_policy_violation). The texts are whatever the door's
 * request carries for a model to read.
 */
import { Effect, Metric } from "effect"
import { PermissionDenied } from "../domain/errors.js"
import type { Group } from "../domain/model.js"
import { moderationFlagged, taggedCounters } from "../observability/metrics.js"
import type { ModerationShape } from "../services/moderation/Moderation.js"

const flaggedCounter = taggedCounters(moderationFlagged, ["group", "category"])

export const moderate = (
  moderation: ModerationShape,
  group: Group,
  texts: () => ReadonlyArray<string>
): Effect.Effect<void, PermissionDenied> => {
  if (group.moderation === "off") return Effect.void
  return Effect.flatMap(moderation.check(texts()), (decision) => {
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
