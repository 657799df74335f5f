/**
 * Messages requests for OpenAI groups: translated. The Messages body becomes a Responses body
 * (src/translate/messages/request.ts), the Responses answer a Messages one, JSON or event by event
 * (response.ts, stream.ts). The upstream's prompt cache is named by the session when the client's
 * request names none, so a long Claude Code session reads its prefix from the cache.
 */
import { Effect, Result, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { responsesAnswerFacts } from "../../domain/answerFacts.js"
import { InvalidRequest } from "../../domain/errors.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import { promptCacheKeyFor } from "../../domain/session.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { messagesToResponses } from "../../translate/messages/request.js"
import { responseToMessage } from "../../translate/messages/response.js"
import { MessagesStreamTranslator } from "../../translate/messages/stream.js"
import { json as jsonReply } from "../kit/reply.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import { relaySse } from "../kit/sseRelay.js"
import type { Answer } from "../../core/upstreamCall.js"
import type { MessagesPlan, MessagesPlanner } from "./anthropicPlan.js"
import { errorEvent } from "./events.js"
import { messagesTexts, roughMessagesTokens } from "./policy.js"
import { budgetHalt } from "../kit/budget.js"
import { frameGuard } from "../kit/frameGuard.js"
import { ResponsesUpstreamReader } from "../kit/responsesUpstreamReader.js"

export const makeOpenAIPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: MessagesPlanner = Effect.fnUntraced(function*(input) {
    const { principal, request } = input
    const translation = messagesToResponses(request.body)
    if (Result.isFailure(translation)) {
      const e = translation.failure
      return yield* new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param })
    }
    const body = translation.success
    if (body["prompt_cache_key"] === undefined && input.session !== undefined) {
      body["prompt_cache_key"] = promptCacheKeyFor(input.session)
    }
    const build = (account: Account): UpstreamRequest => ({
      path: "/responses",
      body: JSON.stringify({ ...body, model: upstreamModel(account, request.model), stream: request.stream }),
      stream: request.stream,
      headers: undefined
    })
    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body: response }) => {
        const answered = responsesAnswerFacts(response)
        const { message, usage } = responseToMessage(response, { model: request.model })
        return { answer: jsonReply(message), usage: reported(usage, answered) }
      })
    const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
      const reader = new ResponsesUpstreamReader()
      const translator = new MessagesStreamTranslator({ model: request.model })
      const usage = meteredAtEnd(
        () => translator.usage() ?? estimatedUsage(principal.group.name, messagesTexts(request.body), translator.outputText()),
        () => reader.facts()
      )
      const frames = relaySse(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) {
            const event = reader.event(frame)
            if (event !== undefined) for (const e of translator.step(event)) out.event(e.type, JSON.stringify(e))
          }
        },
        finish: (early, out) => {
          for (const e of translator.finish(early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early })) {
            // The gateway's own early end (budget stop, drain, an event too large) is told as this
            // door tells it on every group (events.ts: the budget stop is a billing_error), not as
            // the translation reads an upstream's Responses code.
            const event = e.type === "error" && early !== undefined ? errorEvent(early.code, early.message) : e
            out.event(event.type, JSON.stringify(event))
          }
        },
        halt: budgetHalt(input.budget, () => roughMessagesTokens(request.body), () => reader.sentChars())
      }, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: frames, usage }
    }
    const messagesPlan: MessagesPlan = { build, json, stream }
    return messagesPlan
  })
  return plan
})
