/**
 * Responses-native groups: the request goes to an OpenAI Responses account as the client sent it
 * (re-serialised only when the account maps the model name or the body must change: rewrittenBody
 * below), and the answer comes back with the requested model name. Streams flow read by read;
 * nothing is buffered whole. The handler runs the upstream call; this file builds its request and
 * renders its answer (a ResponsesPlan).
 */
import { Clock, Effect, type Stream } from "effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { responsesAnswerFacts } from "../../domain/answerFacts.js"
import { UpstreamFailed } from "../../domain/errors.js"
import { type ForwardedHeaders, openaiForwardedHeaders } from "../../domain/forwardHeaders.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { fromResponsesAnswer } from "../../domain/upstreamJson.js"
import { withToolCalls } from "../../domain/usage.js"
import { json as jsonReply, rawJson } from "../kit/reply.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import { Settings } from "../../config/AppConfig.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { promptCacheKeyFor, tenantCacheKey } from "../../domain/session.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { PassthroughStream, type StreamEnding } from "./passthroughStream.js"
import { moderationTexts, roughInputTokens, stripImageCalls } from "./policy.js"
import { budgetHalt } from "../kit/budget.js"
import { frameGuard } from "../kit/frameGuard.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import { relay } from "../kit/sseRelay.js"
import type { Collector } from "../kit/eventOut.js"
import type { Answer } from "../../core/upstreamCall.js"
import type { Plan, PlanInput, Planner } from "../../core/plan.js"
import type { ResponsesRequest } from "./validate.js"

/** What the Responses door's planners read: PlanInput, and the path's tail. */
export interface ResponsesPlanInput extends PlanInput<ResponsesRequest> {
  /** What followed `/responses` in the client's path (e.g. `/compact`), kept for the upstream URL. */
  readonly subpath: string
}

/**
 * The client's body with `"prompt_cache_key"` placed first, without re-serialising it: the body
 * is a JSON object (validated) that has other members (the model at least).
 */
const withCacheKey = (rawBody: string, key: string): string => {
  const open = rawBody.indexOf("{")
  return `${rawBody.slice(0, open + 1)}"prompt_cache_key":${JSON.stringify(key)},${rawBody.slice(open + 1)}`
}

/**
 * The client's body as the upstream must see it, when that is not the client's bytes: its own
 * `prompt_cache_key` namespaced by its tenant (tenantCacheKey: two tenants on one account never
 * share a cache), and a `previous_response_id: null` left out (read as absent; validate.ts refuses
 * any other value). Undefined when neither is there: the client's bytes go as they are.
 */
const rewrittenBody = (input: ResponsesPlanInput): Record<string, unknown> | undefined => {
  const body = input.request.body
  const clientKey = body["prompt_cache_key"]
  const ownKey = typeof clientKey === "string"
  if (!ownKey && !Object.hasOwn(body, "previous_response_id")) return undefined
  const { previous_response_id: _absent, ...rest } = body
  return ownKey ? { ...rest, prompt_cache_key: tenantCacheKey(input.principal.user.name, clientKey) } : rest
}

const buildRequest = (input: ResponsesPlanInput, headers: ForwardedHeaders | undefined) => {
  const rewritten = rewrittenBody(input)
  // The upstream's prompt cache named by the session when the client named none: the same across
  // a session's turns, different across sessions (promptCacheKeyFor: a keyed hash, no client text).
  const cacheKey = input.request.body["prompt_cache_key"] === undefined && input.session !== undefined
    ? promptCacheKeyFor(input.session)
    : undefined
  const withKey = (body: Record<string, unknown>) => cacheKey === undefined ? body : { prompt_cache_key: cacheKey, ...body }
  const asSent = rewritten !== undefined
    ? JSON.stringify(withKey(rewritten))
    : cacheKey === undefined
    ? input.rawBody
    : withCacheKey(input.rawBody, cacheKey)
  return (account: Account): UpstreamRequest => {
    const model = upstreamModel(account, input.request.model)
    return {
      path: `/responses${input.subpath}`,
      body: model === input.request.model ? asSent : JSON.stringify({ ...withKey(rewritten ?? input.request.body), model }),
      stream: input.request.stream,
      headers
    }
  }
}

/**
 * How one request is served, split at the upstream call so the door decides when and where the
 * call runs (at once, or inside an SSE response that is waiting for a slot). Each renderer returns
 * its rendering with how to read what it used (the core settles that).
 */
export interface ResponsesPlan extends Plan {
  /** A non-stream answer as the client's JSON response. */
  readonly json: (answer: Answer) => Effect.Effect<Rendered<HttpServerResponse.HttpServerResponse>, UpstreamFailed>
  /**
   * A stream answer's events, collected for the door's wire (SSE bytes over HTTP, one message per
   * event on a WebSocket): never fails, always ends with a terminal event.
   */
  readonly stream: <O>(answer: Answer, collector: () => Collector<O>) => Rendered<Stream.Stream<O>>
}

/** How a request is planned for a Responses account; Messages-native groups plan in anthropicPlan.ts. */
export type ResponsesPlanner = Planner<ResponsesPlanInput, ResponsesPlan>

/** How an upstream stream that ended without its terminal event is closed. */
const UNFINISHED: StreamEnding = {
  code: "server_error",
  message: "The upstream stream ended before the response was complete"
}

export const makeOpenAIPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ResponsesPlanner = Effect.fnUntraced(function*(input) {
    const clock = yield* Clock.Clock
    const { principal, request } = input
    const stripImages = !principal.group.allowImageGeneration

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body, text }) => {
        // Read before image items are stripped: the tool calls among the output are billed too.
        const usage = reported(fromResponsesAnswer(body), responsesAnswerFacts(body))
        // Re-serialise only when something must change: the model name, or image items this
        // group may not receive.
        const stripped = stripImages && stripImageCalls(body)
        if (stripped || body["model"] !== request.model) {
          body["model"] = request.model
          return { answer: jsonReply(body), usage }
        }
        return { answer: rawJson(text), usage }
      })

    const stream = <O>(answer: Answer, collector: () => Collector<O>): Rendered<Stream.Stream<O>> => {
      const state = new PassthroughStream(request.model, { stripImageCalls: stripImages, request: request.body })
      // Billed as the upstream reported it; a stream cut before that is billed for its input and
      // the output sent, in tokens (counted only then, never for a stream that completed).
      const usage = meteredAtEnd(
        () =>
          state.reportedUsage() ??
            Effect.map(
              estimatedUsage(principal.group.name, moderationTexts(request.body), state.outputSoFar()),
              // The provider tool calls the upstream finished before the cut were made: billed.
              (estimate) => withToolCalls(estimate, state.toolCallsSoFar())
            ),
        () => state.answerFacts()
      )
      const events = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) state.onFrame(frame, out)
        },
        // A complete stream already carries its terminal event; `finish` only adds one if not.
        finish: (early, out) => state.finish(early ?? UNFINISHED, clock.currentTimeMillisUnsafe(), out),
        halt: budgetHalt(input.budget, () => roughInputTokens(request.body), () => state.outputCharsSoFar())
      }, collector, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: events, usage }
    }

    const responsesPlan: ResponsesPlan = {
      build: buildRequest(input, openaiForwardedHeaders(input.clientHeaders)),
      json,
      stream
    }
    return responsesPlan
  })
  return plan
})
