/**
 * What the doors read of an upstream's answer whatever their wire format: a JSON answer's text and
 * object, and the usage of a stream that ended before its upstream reported any.
 */
import { Effect, Metric, Result } from "effect"
import type { Answer } from "../../core/upstreamCall.js"
import { UpstreamFailed } from "../../domain/errors.js"
import { parseUpstreamJson } from "../../domain/upstreamJson.js"
import { emptyUsage, type TokenUsage } from "../../domain/usage.js"
import { taggedCounters, usageEstimated } from "../../observability/metrics.js"
import { readText } from "../../services/upstream/Upstream.js"
import { countTokens } from "./tokenEstimate.js"

/**
 * A JSON answer's text and object: as the upstream call read them, or read now; one that is not
 * a JSON object is a typed upstream failure (502 upstream_invalid_response), never a defect.
 */
export const answerJson = (answer: Answer): Effect.Effect<{ readonly text: string; readonly body: Record<string, unknown> }, UpstreamFailed> =>
  answer.json !== undefined
    ? Effect.succeed(answer.json)
    : Effect.flatMap(readText(answer.response), (text) =>
      Result.match(parseUpstreamJson(text), {
        onSuccess: (body) => Effect.succeed({ text, body }),
        onFailure: (why) => Effect.fail(new UpstreamFailed({ status: 502, code: "upstream_invalid_response", message: why }))
      }))

const estimatedCounter = taggedCounters(usageEstimated, ["group"])

/**
 * The usage of a stream that ended before its upstream reported any (the client left, the
 * upstream was cut): the request's input and the output sent so far, in tokens. Counted, and
 * logged, as an estimate.
 */
export const estimatedUsage = (group: string, input: ReadonlyArray<string>, output: string): Effect.Effect<TokenUsage> =>
  Effect.zipWith(countTokens(input), countTokens([output]), (inputTokens, outputTokens): TokenUsage => ({
    ...emptyUsage,
    inputTokens,
    outputTokens
  })).pipe(
    Effect.tap(() => Metric.update(estimatedCounter(group), 1)),
    Effect.tap((usage) =>
      Effect.logInfo("usage estimated for a stream without upstream usage").pipe(
        Effect.annotateLogs({ input_tokens: usage.inputTokens, output_tokens: usage.outputTokens })
      )
    )
  )
