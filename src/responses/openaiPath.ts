/**
 * Responses-native groups: the request goes to an OpenAI Responses account as the client sent it
 * (re-serialised only when the account maps the model name), and the answer comes back with the
 * requested model name. Streams flow frame by frame; nothing is buffered whole. The handler runs
 * the upstream call; this file builds its request and renders its answer (a PathPlan).
 */
import { Effect } from "effect"
import type { InvalidRequest, UpstreamFailed } from "../domain/errors.js"
import { type Account, type Principal, upstreamModel } from "../domain/model.js"
import { fromResponsesUsage } from "../domain/usage.js"
import { observe, upstreamLatency } from "../http/metrics.js"
import { json as jsonReply, rawJson, type SseReply, type TextReply } from "../http/reply.js"
import { Lifecycle } from "../services/Lifecycle.js"
import { Quota } from "../services/Quota.js"
import { readText, type UpstreamRequest } from "../upstream/Upstream.js"
import { PassthroughStream, type StreamEnding } from "./passthroughStream.js"
import { stripImageCalls } from "./policy.js"
import { settleUsage } from "./settle.js"
import { pumpFrames } from "./ssePump.js"
import type { Answer } from "./upstreamCall.js"
import type { ResponsesRequest } from "./validate.js"

export interface PathInput {
  readonly requestId: string
  readonly principal: Principal
  readonly request: ResponsesRequest
  /** The body exactly as the client sent it. */
  readonly rawBody: string
  /** What followed `/responses` in the client's path (e.g. `/compact`), kept for the upstream URL. */
  readonly subpath: string
}

const buildRequest = (input: PathInput) => (account: Account): UpstreamRequest => {
  const model = upstreamModel(account, input.request.model)
  return {
    path: `/responses${input.subpath}`,
    body: model === input.request.model ? input.rawBody : JSON.stringify({ ...input.request.body, model }),
    stream: input.request.stream
  }
}

/**
 * How one request is served, split at the upstream call so the handler decides when and where the
 * call runs (at once, or inside an SSE response that is waiting for a slot).
 */
export interface PathPlan {
  readonly build: (account: Account) => UpstreamRequest
  /** A non-stream answer as the client's JSON response (usage settled). */
  readonly json: (answer: Answer) => Effect.Effect<TextReply, UpstreamFailed>
  /** A stream answer written as SSE frames: never fails, always ends with a terminal event, settles usage. */
  readonly stream: (answer: Answer) => SseReply["run"]
}

/** How an upstream stream that ended without its terminal event is closed. */
const UNFINISHED: StreamEnding = {
  code: "server_error",
  message: "The upstream stream ended before the response was complete"
}

/** How a request is planned for a Responses account; Messages-native groups plan in messagesPath.ts. */
export type Planner = (input: PathInput) => Effect.Effect<PathPlan, InvalidRequest>

export const makeOpenAIPlanner = Effect.gen(function*() {
  const quota = yield* Quota
  const lifecycle = yield* Lifecycle
  const plan: Planner = (input) => {
    const { principal, request, requestId } = input
    const started = Date.now()
    const stripImages = !principal.group.allowImageGeneration

    const settle = (usage: unknown) => settleUsage(quota, requestId, principal, request.model, fromResponsesUsage(usage))

    const json = (answer: Answer) =>
      Effect.map(readText(answer.response), (text): TextReply => {
        observe(upstreamLatency, Date.now() - started)
        let body: Record<string, unknown> | undefined
        try {
          body = JSON.parse(text) as Record<string, unknown>
        } catch {
          body = undefined
        }
        const after = settle(body?.["usage"])
        // Re-serialise only when something must change: the model name, or image items this
        // group may not receive.
        const stripped = stripImages && body !== undefined && stripImageCalls(body)
        if (body !== undefined && (stripped || body["model"] !== request.model)) {
          body["model"] = request.model
          return { ...jsonReply(body), after }
        }
        return { ...rawJson(text), after }
      })

    const stream = (answer: Answer): SseReply["run"] => (sink) => {
      const state = new PassthroughStream(request.model, { stripImageCalls: stripImages })
      return pumpFrames(answer.response, sink, lifecycle, {
        frames: (frames) => {
          let out = ""
          for (const frame of frames) out += state.onFrame(frame) ?? ""
          return out
        },
        // A complete stream already carries its terminal event; `finish` only adds one if not.
        finish: (early) => state.finish(early ?? UNFINISHED),
        settle: Effect.suspend(() => {
          observe(upstreamLatency, Date.now() - started)
          return settleUsage(quota, requestId, principal, request.model, state.usageSoFar())
        })
      })
    }

    return Effect.succeed<PathPlan>({ build: buildRequest(input), json, stream })
  }
  return plan
})
