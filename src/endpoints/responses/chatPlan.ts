/**
 * Responses requests for OpenAI-compatible Chat Completions groups (`openai_chat`): the Responses
 * request becomes a Chat request (src/translate/chatUpstream/request.ts), the answer a Responses
 * one, JSON or chunk by chunk through the same stream machine as Anthropic answers, so Codex and
 * the openai SDK read what they read from OpenAI. Streams always ask the server for usage.
 */
import { Clock, Effect, Result, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { chatAnswerFacts } from "../../domain/answerFacts.js"
import { InvalidRequest } from "../../domain/errors.js"
import { newId } from "../../domain/ids.js"
import { emptyUsage } from "../../domain/usage.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { responsesToChat } from "../../translate/chatUpstream/request.js"
import { chatUsageOf } from "../../translate/chatUpstream/output.js"
import { completionText, completionToResponse } from "../../translate/chatUpstream/response.js"
import { COMPACTION_MAX_TOKENS, compactedWindow, compactionBody } from "../../translate/compaction.js"
import { toolNameMap } from "../../translate/names.js"
import { budgetHalt } from "../kit/budget.js"
import { ChatUpstreamReader } from "../kit/chatUpstreamReader.js"
import type { Collector } from "../kit/eventOut.js"
import { frameGuard } from "../kit/frameGuard.js"
import { json as jsonReply } from "../kit/reply.js"
import { relay } from "../kit/sseRelay.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import type { ResponsesPlan, ResponsesPlanner } from "./openaiPlan.js"
import { moderationTexts, roughInputTokens } from "./policy.js"
import { isCompaction } from "./subpath.js"

export const makeChatPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ResponsesPlanner = Effect.fnUntraced(function*(input) {
    const { request } = input
    // A compaction is one summarising call, as on an Anthropic group (src/translate/compaction.ts).
    const compaction = isCompaction(input.subpath)
    const body = compaction ? compactionBody(request.body, COMPACTION_MAX_TOKENS) : request.body
    const translation = responsesToChat(body, { upstreamModel: request.model })
    if (Result.isFailure(translation)) {
      const e = translation.failure
      return yield* new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param })
    }
    const translated = translation.success
    const build = (account: Account): UpstreamRequest => ({
      path: "/chat/completions",
      body: JSON.stringify({ ...translated, model: upstreamModel(account, request.model) }),
      stream: request.stream,
      headers: undefined
    })
    const clock = yield* Clock.Clock
    const ctx = {
      responseId: newId("resp"),
      model: request.model,
      createdAt: Math.floor(clock.currentTimeMillisUnsafe() / 1000),
      now: () => clock.currentTimeMillisUnsafe(),
      request: request.body,
      toolNames: toolNameMap(request.body)
    }

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body: completion }) => {
        const { response, usage } = compaction
          ? compactedWindow(request.body, completionText(completion), chatUsageOf(completion["usage"]) ?? emptyUsage, { id: ctx.responseId, createdAt: ctx.createdAt })
          : completionToResponse(completion, ctx)
        return { answer: jsonReply(response), usage: reported(usage, chatAnswerFacts(completion)) }
      })

    const stream = <O>(answer: Answer, collector: () => Collector<O>): Rendered<Stream.Stream<O>> => {
      const reader = new ChatUpstreamReader(ctx)
      const events = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) for (const e of reader.frame(frame)) out.event(e.type, JSON.stringify(e))
        },
        finish: (early, out) => {
          for (const e of reader.finish(early)) out.event(e.type, JSON.stringify(e))
        },
        halt: budgetHalt(input.budget, () => roughInputTokens(request.body), () => reader.sent().length)
      }, collector, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      const usage = meteredAtEnd(
        // A stream cut before the server's usage chunk is billed for its input and what it sent.
        () => reader.usage() ?? estimatedUsage(input.principal.group.name, moderationTexts(request.body), reader.sent()),
        () => reader.facts()
      )
      return { answer: events, usage }
    }

    const responsesPlan: ResponsesPlan = { build, json, stream }
    return responsesPlan
  })
  return plan
})
