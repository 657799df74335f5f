/**
 * Messages requests for OpenAI-compatible Chat Completions groups (`openai_chat`): translated
 * through Responses both ways, by the translations the other doors use: Messages -> Responses
 * (src/translate/messages) -> Chat (src/translate/chatUpstream), and the Chat answer -> Responses
 * -> Messages. Claude Code thus gets what it gets from an OpenAI group, reasoning as thinking.
 */
import { Clock, Effect, Result, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { InvalidRequest } from "../../domain/errors.js"
import { newId } from "../../domain/ids.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { responsesToChat } from "../../translate/chatUpstream/request.js"
import { chatAnswerFacts } from "../../domain/answerFacts.js"
import { completionToResponse } from "../../translate/chatUpstream/response.js"
import { messagesToResponses } from "../../translate/messages/request.js"
import { responseToMessage } from "../../translate/messages/response.js"
import { MessagesStreamTranslator } from "../../translate/messages/stream.js"
import { toolNameMap } from "../../translate/names.js"
import { budgetHalt } from "../kit/budget.js"
import { ChatUpstreamReader } from "../kit/chatUpstreamReader.js"
import { frameGuard } from "../kit/frameGuard.js"
import { json as jsonReply } from "../kit/reply.js"
import { relaySse } from "../kit/sseRelay.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import type { MessagesPlan, MessagesPlanner } from "./anthropicPlan.js"
import { errorEvent } from "./events.js"
import { messagesTexts, roughMessagesTokens } from "./policy.js"

export const makeChatPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: MessagesPlanner = Effect.fnUntraced(function*(input) {
    const { request } = input
    const translated = Result.flatMap(messagesToResponses(request.body), (responses) =>
      Result.map(responsesToChat(responses, { upstreamModel: request.model }), (chat) => ({ responses, chat })))
    if (Result.isFailure(translated)) {
      const e = translated.failure
      return yield* new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param })
    }
    const { chat, responses } = translated.success
    const build = (account: Account): UpstreamRequest => ({
      path: "/chat/completions",
      body: JSON.stringify({ ...chat, model: upstreamModel(account, request.model) }),
      stream: request.stream,
      headers: undefined
    })
    const clock = yield* Clock.Clock
    const ctx = {
      responseId: newId("resp"),
      model: request.model,
      createdAt: Math.floor(clock.currentTimeMillisUnsafe() / 1000),
      now: () => clock.currentTimeMillisUnsafe(),
      request: responses,
      toolNames: toolNameMap(responses)
    }

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body }) => {
        const { response, usage } = completionToResponse(body, ctx)
        const { message } = responseToMessage(response, { model: request.model })
        return { answer: jsonReply(message), usage: reported(usage, chatAnswerFacts(body)) }
      })

    const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
      const reader = new ChatUpstreamReader(ctx)
      const messages = new MessagesStreamTranslator({ model: request.model })
      const frames = relaySse(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) {
            for (const event of reader.frame(frame)) for (const e of messages.step(event)) out.event(e.type, JSON.stringify(e))
          }
        },
        finish: (early, out) => {
          for (const event of reader.finish(early)) {
            for (const e of messages.step(event)) {
              // The gateway's own early end is told as this door tells it (events.ts), as on OpenAI groups.
              const told = e.type === "error" && early !== undefined ? errorEvent(early.code, early.message) : e
              out.event(told.type, JSON.stringify(told))
            }
          }
        },
        halt: budgetHalt(input.budget, () => roughMessagesTokens(request.body), () => reader.sent().length)
      }, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      const usage = meteredAtEnd(
        // A stream cut before the server's usage chunk is billed for its input and what it sent.
        () => reader.usage() ?? estimatedUsage(input.principal.group.name, messagesTexts(request.body), reader.sent()),
        () => reader.facts()
      )
      return { answer: frames, usage }
    }

    const messagesPlan: MessagesPlan = { build, json, stream }
    return messagesPlan
  })
  return plan
})
