/**
 * Messages-style groups: the Responses request is translated to an Anthropic Messages request, the
 * answer translated back (JSON, or event by event for streams). A compaction
 * (`/responses/compact`) is one summarising Messages call answered as a compacted window
 * (src/translate/compaction.ts), billed as any turn. The translation is pure
 * (`src/translate`); this file wires it to the upstream answer, the drain signal and settlement, as
 * a ResponsesPlan the door runs around the upstream call.
 */
import { Clock, Effect, Result } from "effect"
import { messagesAnswerFacts } from "../../domain/answerFacts.js"
import { InvalidRequest } from "../../domain/errors.js"
import { anthropicForwardedHeaders, type ForwardedHeaders } from "../../domain/forwardHeaders.js"
import { newId } from "../../domain/ids.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { json as jsonReply } from "../kit/reply.js"
import { Settings } from "../../config/AppConfig.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { toolNameMap } from "../../translate/names.js"
import { compactedResponse, compactionRequest } from "../../translate/compaction.js"
import { responsesToMessages } from "../../translate/request.js"
import { messageToResponse } from "../../translate/response.js"
import type { AnthropicMessage } from "../../translate/types.js"
import type { ResponsesPlan, ResponsesPlanner } from "./openaiPlan.js"
import { answerJson } from "../kit/upstreamAnswer.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Stream } from "effect"
import { relay } from "../kit/sseRelay.js"
import { budgetHalt } from "../kit/budget.js"
import { MessagesUpstreamReader } from "../kit/messagesUpstreamReader.js"
import { frameGuard } from "../kit/frameGuard.js"
import { roughInputTokens } from "./policy.js"
import { isCompaction } from "./subpath.js"
import type { Collector } from "../kit/eventOut.js"
import type { Answer } from "../../core/upstreamCall.js"

export const makeAnthropicPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ResponsesPlanner = Effect.fnUntraced(function*(input) {
    const { request } = input
    const compaction = isCompaction(input.subpath)
    const translation = (compaction ? compactionRequest : responsesToMessages)(request.body, { upstreamModel: request.model })
    if (Result.isFailure(translation)) {
      const e = translation.failure
      return yield* new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param })
    }
    const translated = translation.success
    const clock = yield* Clock.Clock
    const now = clock.currentTimeMillisUnsafe()
    const build = (headers: ForwardedHeaders | undefined) => (account: Account): UpstreamRequest => ({
      path: "/v1/messages",
      body: JSON.stringify({ ...translated, model: upstreamModel(account, request.model), stream: request.stream }),
      stream: request.stream,
      headers
    })
    const ctx = {
      responseId: newId("resp"),
      model: request.model,
      createdAt: Math.floor(now / 1000),
      // completed_at: the time the answer completes, on the same Clock.
      now: () => clock.currentTimeMillisUnsafe(),
      request: request.body,
      toolNames: toolNameMap(request.body)
    }

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body }) => {
        // The upstream's JSON taken as the Messages answer it is (an Anthropic account answered 2xx);
        // the translation reads every member defensively.
        const message = body as unknown as AnthropicMessage
        const { response, usage } = compaction
          ? compactedResponse(request.body, message, { id: ctx.responseId, createdAt: ctx.createdAt })
          : messageToResponse(message, ctx)
        return { answer: jsonReply(response), usage: reported(usage, messagesAnswerFacts(body)) }
      })

    const stream = <O>(answer: Answer, collector: () => Collector<O>): Rendered<Stream.Stream<O>> => {
      const reader = new MessagesUpstreamReader(ctx)
      const events = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) for (const e of reader.frame(frame)) out.event(e.type, JSON.stringify(e))
        },
        // A stream the upstream finished needs nothing more; otherwise it is closed as it stopped.
        finish: (early, out) => {
          for (const e of reader.finish(early)) out.event(e.type, JSON.stringify(e))
        },
        halt: budgetHalt(input.budget, () => roughInputTokens(request.body), () => reader.sentChars())
      }, collector, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: events, usage: meteredAtEnd(() => reader.usage(), () => reader.facts()) }
    }

    const responsesPlan: ResponsesPlan = {
      build: build(anthropicForwardedHeaders(input.clientHeaders)),
      json,
      stream
    }
    return responsesPlan
  })
  return plan
})
