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
import { afterChatChunk, type AnswerFacts, chatAnswerFacts } from "../../domain/answerFacts.js"
import { InvalidRequest } from "../../domain/errors.js"
import { newId } from "../../domain/ids.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { eventData } from "../../domain/sse.js"
import type { TokenUsage } from "../../domain/usage.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { responsesToChat } from "../../translate/chatUpstream/request.js"
import { chatUsageOf } from "../../translate/chatUpstream/output.js"
import { completionToResponse } from "../../translate/chatUpstream/response.js"
import { endChatStream, initialChatStreamState, stepChatStream } from "../../translate/chatUpstream/stream.js"
import { toolNameMap } from "../../translate/names.js"
import { budgetHalt, chatDeltaText } from "../kit/budget.js"
import type { Collector } from "../kit/eventOut.js"
import { frameGuard } from "../kit/frameGuard.js"
import { json as jsonReply } from "../kit/reply.js"
import { relay } from "../kit/sseRelay.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import type { ResponsesPlan, ResponsesPlanner } from "./openaiPlan.js"
import { moderationTexts, roughInputTokens } from "./policy.js"

export const makeChatPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ResponsesPlanner = (input) => Effect.gen(function*() {
    const { request } = input
    const translation = responsesToChat(request.body, { upstreamModel: request.model })
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
      Effect.map(answerJson(answer), ({ body }) => {
        const { response, usage } = completionToResponse(body, ctx)
        return { answer: jsonReply(response), usage: reported(usage, chatAnswerFacts(body)) }
      })

    const stream = <O>(answer: Answer, collector: () => Collector<O>): Rendered<Stream.Stream<O>> => {
      let state = initialChatStreamState(ctx)
      let sent = ""
      let serverUsage: TokenUsage | undefined
      let answered: AnswerFacts | undefined
      const events = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) {
            if (frame.data === "[DONE]") {
              const [next, events] = endChatStream(state, { _tag: "Done" })
              state = next
              for (const e of events) out.event(e.type, JSON.stringify(e))
              continue
            }
            const chunk = eventData(frame.data)
            if (chunk === undefined) continue
            sent += chatDeltaText(chunk)
            serverUsage = chatUsageOf(chunk["usage"]) ?? serverUsage
            answered = afterChatChunk(answered, chunk)
            const [next, events] = stepChatStream(state, chunk)
            state = next
            for (const e of events) out.event(e.type, JSON.stringify(e))
          }
        },
        finish: (early, out) => {
          for (const e of endChatStream(state, early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early })[1]) {
            out.event(e.type, JSON.stringify(e))
          }
        },
        halt: budgetHalt(input.budget, () => roughInputTokens(request.body), () => sent.length)
      }, collector, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: events, usage: meteredAtEnd(
        // A stream cut before the server's usage chunk is billed for its input and what it sent.
        () => serverUsage ?? estimatedUsage(input.principal.group.name, moderationTexts(request.body), sent),
        () => answered
      ) }
    }

    const responsesPlan: ResponsesPlan = { build, json, stream }
    return responsesPlan
  })
  return plan
})
