/**
 * Chat requests for Anthropic groups: translated twice, through Responses. The Chat body, already
 * a Responses body (plan.ts), becomes a Messages request by the same translation the Responses
 * door uses (src/translate/request.ts: cache breakpoints, thinking budgets, tool names); the
 * Messages answer becomes a Responses one (src/translate) and that a Chat one (src/translate/chat).
 * One Chat <-> Responses pair thus serves every group, and what the Responses door's translation
 * gets right (or fixes) holds here too.
 */
import { Clock, Effect, Result, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { messagesAnswerFacts } from "../../domain/answerFacts.js"
import { InvalidRequest } from "../../domain/errors.js"
import { anthropicForwardedHeaders } from "../../domain/forwardHeaders.js"
import { newId } from "../../domain/ids.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { responseToCompletion } from "../../translate/chat/response.js"
import { ChatStreamTranslator } from "../../translate/chat/stream.js"
import { toolNameMap } from "../../translate/names.js"
import { responsesToMessages } from "../../translate/request.js"
import { messageToResponse } from "../../translate/response.js"
import type { AnthropicMessage, ResponsesStreamEvent } from "../../translate/types.js"
import { budgetHalt } from "../kit/budget.js"
import { MessagesUpstreamReader } from "../kit/messagesUpstreamReader.js"
import type { EventOut } from "../kit/eventOut.js"
import { frameGuard } from "../kit/frameGuard.js"
import { json as jsonReply } from "../kit/reply.js"
import { relay } from "../kit/sseRelay.js"
import { answerJson } from "../kit/upstreamAnswer.js"
import { ChatSseBytes, DONE_DATA } from "./frames.js"
import type { ChatPlan, ChatPlanner } from "./plan.js"
import { roughChatTokens } from "./policy.js"

export const makeAnthropicPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ChatPlanner = Effect.fnUntraced(function*(input) {
    const { request } = input
    const translation = responsesToMessages(request.responses, { upstreamModel: request.model })
    if (Result.isFailure(translation)) {
      const e = translation.failure
      return yield* new InvalidRequest({ code: "unsupported_input", message: e.message, param: e.param })
    }
    const translated = translation.success
    const headers = anthropicForwardedHeaders(input.clientHeaders)
    const build = (account: Account): UpstreamRequest => ({
      path: "/v1/messages",
      body: JSON.stringify({ ...translated, model: upstreamModel(account, request.model), stream: request.stream }),
      stream: request.stream,
      headers
    })
    const clock = yield* Clock.Clock
    const now = clock.currentTimeMillisUnsafe()
    const ctx = {
      responseId: newId("resp"),
      model: request.model,
      createdAt: Math.floor(now / 1000),
      now: () => clock.currentTimeMillisUnsafe(),
      request: request.responses,
      toolNames: toolNameMap(request.responses)
    }
    const nowSeconds = Math.floor(now / 1000)

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body }) => {
        const { response, usage } = messageToResponse(body as unknown as AnthropicMessage, ctx)
        const { completion } = responseToCompletion(response, { model: request.model, nowSeconds })
        return { answer: jsonReply(completion), usage: reported(usage, messagesAnswerFacts(body)) }
      })

    const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
      const reader = new MessagesUpstreamReader(ctx)
      const chat = new ChatStreamTranslator({ model: request.model, includeUsage: request.includeUsage, nowSeconds })
      const pass = (events: ReadonlyArray<ResponsesStreamEvent>, out: EventOut) => {
        for (const event of events) for (const f of chat.step(event)) out.event("chunk", JSON.stringify(f))
      }
      const frames = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) pass(reader.frame(frame), out)
        },
        finish: (early, out) => {
          pass(reader.finish(early), out)
          out.event("done", DONE_DATA)
        },
        halt: budgetHalt(input.budget, () => roughChatTokens(request.body), () => reader.sentChars())
      }, () => new ChatSseBytes(), lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: frames, usage: meteredAtEnd(() => reader.usage(), () => reader.facts()) }
    }

    const chatPlan: ChatPlan = { build, json, stream }
    return chatPlan
  })
  return plan
})
