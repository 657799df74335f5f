/**
 * POST /v1/responses (and its aliases): the pipeline in DESIGN.md's order. Each step is a service
 * call or a pure policy; this file only composes them.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Metric, MetricLabel } from "effect"
import { Settings } from "../config/AppConfig.js"
import { ModelNotFound, PermissionDenied } from "../domain/errors.js"
import type { Group } from "../domain/model.js"
import { authenticate } from "../http/auth.js"
import { parseJson, readBodyText } from "../http/body.js"
import { RequestId } from "../http/context.js"
import { moderationFlagged } from "../http/metrics.js"
import { Moderation } from "../services/Moderation.js"
import { Quota } from "../services/Quota.js"
import { Scheduler } from "../services/Scheduler.js"
import { serveMessages } from "./messagesPath.js"
import { serveOpenAI } from "./openaiPath.js"
import { moderationTexts, offersModel, wantsImageGeneration } from "./policy.js"
import { validateResponsesBody } from "./validate.js"

/** What follows `/responses` in the path, without the query: `""` or e.g. `/compact`. */
export const responsesSubpath = (url: string): string => {
  const path = url.split("?")[0] ?? ""
  const at = path.indexOf("/responses")
  return at < 0 ? "" : path.slice(at + "/responses".length).replace(/\/+$/, "")
}

const moderate = (group: Group, body: Record<string, unknown>) =>
  Effect.gen(function*() {
    if (group.moderation === "off") return
    const moderation = yield* Moderation
    const decision = yield* moderation.check(moderationTexts(body))
    if (decision._tag === "Allow") return
    yield* Metric.increment(
      Metric.taggedWithLabels(moderationFlagged, [
        MetricLabel.make("group", group.name),
        MetricLabel.make("category", decision.category)
      ])
    )
    if (group.moderation === "observe") {
      yield* Effect.logInfo("moderation flagged (observe mode)").pipe(
        Effect.annotateLogs({ group: group.name, category: decision.category })
      )
      return
    }
    return yield* new PermissionDenied({
      code: "content_policy_violation",
      message: `The request was blocked by content policy (category: ${decision.category})`
    })
  })

export const responsesHandler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const requestId = yield* RequestId
  const settings = yield* Settings
  const scheduler = yield* Scheduler
  const quota = yield* Quota

  const principal = yield* authenticate({ allowExpired: false })
  const rawBody = yield* readBodyText(settings.maxBodyBytes)
  const validated = yield* Effect.flatMap(parseJson(rawBody), validateResponsesBody)

  const accounts = yield* scheduler.accounts(principal.group)
  if (!offersModel(principal.group, accounts, validated.model)) {
    return yield* new ModelNotFound({ model: validated.model })
  }
  yield* moderate(principal.group, validated.body)
  if (!principal.group.allowImageGeneration && wantsImageGeneration(validated.body)) {
    return yield* new PermissionDenied({
      code: "image_generation_not_allowed",
      message: "Image generation is not enabled for this group"
    })
  }
  yield* quota.check(principal)
  yield* scheduler.acquireKeySlot(principal)

  const input = { requestId, principal, request: validated, rawBody, subpath: responsesSubpath(request.url) }
  return principal.group.platform === "openai" ? yield* serveOpenAI(input) : yield* serveMessages(input)
})
