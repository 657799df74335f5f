/**
 * Messages-style groups: the Responses request is translated to an Anthropic Messages request, the
 * answer translated back (JSON, or event by event for streams). The translation is pure
 * (`src/translate`); this file wires it to the drain signal and settlement, as a PathPlan the
 * handler runs around the upstream call.
 */
import { Effect, Either, Option } from "effect"
import { InvalidRequest } from "../domain/errors.js"
import { newId } from "../domain/ids.js"
import { type Account, upstreamModel } from "../domain/model.js"
import { observe, upstreamLatency } from "../http/metrics.js"
import { json as jsonReply, type SseReply } from "../http/reply.js"
import { Lifecycle } from "../services/Lifecycle.js"
import { Quota } from "../services/Quota.js"
import { encodeEvent } from "../sse/codec.js"
import { toolNameMap } from "../translate/names.js"
import { responsesToMessages } from "../translate/request.js"
import { messageToResponse } from "../translate/response.js"
import { finishStream, initialStreamState, stepStream, streamUsage } from "../translate/stream.js"
import type { AnthropicMessage, AnthropicStreamEvent } from "../translate/types.js"
import { readText, type UpstreamRequest } from "../upstream/Upstream.js"
import type { PathPlan, Planner } from "./openaiPath.js"
import { settleUsage } from "./settle.js"
import { pumpFrames } from "./ssePump.js"
import type { Answer } from "./upstreamCall.js"

const parseEvent = (data: string): Option.Option<AnthropicStreamEvent> => {
  try {
    const json = JSON.parse(data) as unknown
    return typeof json === "object" && json !== null && typeof (json as { type?: unknown }).type === "string"
      ? Option.some(json as AnthropicStreamEvent)
      : Option.none()
  } catch {
    return Option.none()
  }
}

export const makeMessagesPlanner = Effect.gen(function*() {
  const quota = yield* Quota
  const lifecycle = yield* Lifecycle
  const plan: Planner = (input) => {
    const { principal, request, requestId } = input
    const translation = responsesToMessages(request.body, { upstreamModel: request.model })
    if (Either.isLeft(translation)) {
      const e = translation.left
      return Effect.fail(new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param }))
    }
    const translated = translation.right
    const build = (account: Account): UpstreamRequest => ({
      path: "/v1/messages",
      body: JSON.stringify({ ...translated, model: upstreamModel(account, request.model), stream: request.stream }),
      stream: request.stream
    })
    const started = Date.now()
    const ctx = {
      responseId: newId("resp"),
      model: request.model,
      createdAt: Math.floor(started / 1000),
      request: request.body,
      toolNames: toolNameMap(request.body)
    }

    const json = (answer: Answer) =>
      Effect.flatMap(readText(answer.response), (text) => {
        let message: AnthropicMessage
        try {
          message = JSON.parse(text) as AnthropicMessage
        } catch {
          return Effect.die(new InvalidRequest({ code: "upstream_invalid_response", message: "Upstream answer was not JSON", param: null }))
        }
        const { response, usage } = messageToResponse(message, ctx)
        observe(upstreamLatency, Date.now() - started)
        return Effect.succeed({ ...jsonReply(response), after: settleUsage(quota, requestId, principal, request.model, usage) })
      })

    const stream = (answer: Answer): SseReply["run"] => (sink) => {
      let state = initialStreamState(ctx)
      return pumpFrames(answer.response, sink, lifecycle, {
        frames: (frames) => {
          let out = ""
          for (const frame of frames) {
            const event = parseEvent(frame.data)
            if (Option.isNone(event)) continue
            const [next, events] = stepStream(state, event.value)
            state = next
            for (const e of events) out += encodeEvent(e)
          }
          return out
        },
        // A stream the upstream finished needs nothing more; otherwise it is closed as it stopped.
        finish: (early) =>
          finishStream(state, early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early }).map(encodeEvent).join(""),
        settle: Effect.suspend(() => {
          observe(upstreamLatency, Date.now() - started)
          return settleUsage(quota, requestId, principal, request.model, streamUsage(state))
        })
      })
    }

    return Effect.succeed<PathPlan>({ build, json, stream })
  }
  return plan
})
