/**
 * Chat requests for OpenAI groups: translated. The Chat body, already a Responses body
 * (plan.ts), goes to the account's `/responses`; the answer comes back as a `chat.completion`, or
 * chunk by chunk (src/translate/chat). The upstream's prompt cache is named by the session when the
 * client names none, and a client's own key is namespaced by its tenant, as on the other doors.
 */
import { Clock, Effect, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { responsesAnswerFacts } from "../../domain/answerFacts.js"
import { openaiForwardedHeaders } from "../../domain/forwardHeaders.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { promptCacheKeyFor, tenantCacheKey } from "../../domain/session.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { responseToCompletion } from "../../translate/chat/response.js"
import { ChatStreamTranslator } from "../../translate/chat/stream.js"
import { budgetHalt } from "../kit/budget.js"
import { frameGuard } from "../kit/frameGuard.js"
import { ResponsesUpstreamReader } from "../kit/responsesUpstreamReader.js"
import { json as jsonReply } from "../kit/reply.js"
import { relay } from "../kit/sseRelay.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import { ChatSseBytes, DONE_DATA } from "./frames.js"
import type { ChatPlan, ChatPlanner } from "./plan.js"
import { chatTexts, roughChatTokens } from "./policy.js"

export const makeOpenAIPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ChatPlanner = Effect.fnUntraced(function*(input) {
    const clock = yield* Clock.Clock
    const { principal, request } = input
    const clientKey = request.responses["prompt_cache_key"]
    const cacheKey = typeof clientKey === "string"
      ? tenantCacheKey(principal.user.name, clientKey)
      : input.session !== undefined
      ? promptCacheKeyFor(input.session)
      : undefined
    const body = cacheKey === undefined ? request.responses : { ...request.responses, prompt_cache_key: cacheKey }
    const headers = openaiForwardedHeaders(input.clientHeaders)
    const build = (account: Account): UpstreamRequest => ({
      path: "/responses",
      body: JSON.stringify({ ...body, model: upstreamModel(account, request.model) }),
      stream: request.stream,
      headers
    })
    const nowSeconds = () => Math.floor(clock.currentTimeMillisUnsafe() / 1000)

    const json = (answer: Answer) =>
      Effect.map(answerJson(answer), ({ body: response }) => {
        const { completion, usage } = responseToCompletion(response, { model: request.model, nowSeconds: nowSeconds() })
        return { answer: jsonReply(completion), usage: reported(usage, responsesAnswerFacts(response)) }
      })

    const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
      const reader = new ResponsesUpstreamReader()
      const translator = new ChatStreamTranslator({ model: request.model, includeUsage: request.includeUsage, nowSeconds: nowSeconds() })
      // Billed as the upstream reported it, whether or not the client asked to see the usage.
      const usage = meteredAtEnd(
        () => translator.usage() ?? estimatedUsage(principal.group.name, chatTexts(request.body), translator.outputText()),
        () => reader.facts()
      )
      const frames = relay(answer.response.body, {
        guard: frameGuard(answer.account),
        frames: (frames, out) => {
          for (const frame of frames) {
            const event = reader.event(frame)
            if (event !== undefined) for (const f of translator.step(event)) out.event("chunk", JSON.stringify(f))
          }
        },
        finish: (early, out) => {
          for (const f of translator.finish(early === undefined ? { _tag: "Eof" } : { _tag: "Failed", ...early })) {
            out.event("chunk", JSON.stringify(f))
          }
          out.event("done", DONE_DATA)
        },
        halt: budgetHalt(input.budget, () => roughChatTokens(request.body), () => reader.sentChars())
      }, () => new ChatSseBytes(), lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
      return { answer: frames, usage }
    }

    const chatPlan: ChatPlan = { build, json, stream }
    return chatPlan
  })
  return plan
})
