/**
 * Chat requests for OpenAI-compatible Chat Completions groups (`openai_chat`): passed through.
 * The body goes as the client sent it but for the account's model name and, on a stream, asking
 * for the usage chunk (what the turn is billed by); the answer comes back frame by frame as it
 * came, but for the model name restored and the usage chunk the client did not ask for. A stream
 * the server cut is closed with an `{error}` frame and `[DONE]`, as the other plans close theirs.
 */
import { Effect, type Stream } from "effect"
import { Settings } from "../../config/AppConfig.js"
import type { PlanInput, Planner } from "../../core/plan.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import { afterChatChunk, type AnswerFacts, chatAnswerFacts } from "../../domain/answerFacts.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { eventData, type SseFrame } from "../../domain/sse.js"
import type { TokenUsage } from "../../domain/usage.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { chatUsageOf } from "../../translate/chatUpstream/output.js"
import { budgetHalt, chatDeltaText } from "../kit/budget.js"
import { frameGuard } from "../kit/frameGuard.js"
import { json as jsonReply } from "../kit/reply.js"
import { relay } from "../kit/sseRelay.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import { ChatSseBytes, DONE_DATA, errorData } from "./frames.js"
import type { ChatPlan } from "./plan.js"
import { chatTexts, roughChatTokens } from "./policy.js"
import type { ChatRequest } from "./validate.js"

export type ChatPassthroughPlanner = Planner<PlanInput<ChatRequest>, ChatPlan>

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const UNFINISHED = { code: "server_error", message: "The upstream stream ended before the response was complete" }

export const makePassthroughPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: ChatPassthroughPlanner = (input) =>
    Effect.sync(() => {
      const { principal, request } = input
      const options = isRecord(request.body["stream_options"]) ? request.body["stream_options"] : {}
      const body = request.stream ? { ...request.body, stream_options: { ...options, include_usage: true } } : request.body
      const build = (account: Account): UpstreamRequest => ({
        path: "/chat/completions",
        body: JSON.stringify({ ...body, model: upstreamModel(account, request.model) }),
        stream: request.stream,
        headers: undefined
      })

      const json = Effect.fnUntraced(function*(answer: Answer) {
        const { body: completion } = yield* answerJson(answer)
        const facts = chatAnswerFacts(completion)
        const usage = chatUsageOf(completion["usage"]) ??
          (yield* estimatedUsage(principal.group.name, chatTexts(request.body), JSON.stringify(completion["choices"] ?? "")))
        return { answer: jsonReply({ ...completion, model: request.model }), usage: reported(usage, facts) }
      })

      const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
        const upstreamName = upstreamModel(answer.account, request.model)
        // The model's name as the server writes it, and as the client asked for it.
        const renamed = upstreamName === request.model
          ? undefined
          : { from: `"model":${JSON.stringify(upstreamName)}`, to: `"model":${JSON.stringify(request.model)}` }
        let sent = ""
        let serverUsage: TokenUsage | undefined
        let answered: AnswerFacts | undefined
        let done = false
        let finished = false
        const pass = (frame: SseFrame, out: { frame(frame: SseFrame): void }) => {
          if (renamed === undefined || !frame.text.includes(renamed.from)) return out.frame(frame)
          out.frame({ ...frame, text: frame.text.replaceAll(renamed.from, renamed.to) })
        }
        const frames = relay(answer.response.body, {
          guard: frameGuard(answer.account),
          frames: (frames, out) => {
            for (const frame of frames) {
              if (frame.data === "[DONE]") {
                done = true
                pass(frame, out)
                continue
              }
              const chunk = eventData(frame.data)
              if (chunk !== undefined) {
                sent += chatDeltaText(chunk)
                answered = afterChatChunk(answered, chunk)
                if (answered?.finishReason !== undefined) finished = true
                const usage = chatUsageOf(chunk["usage"])
                if (usage !== undefined) {
                  serverUsage = usage
                  // Asked for by the gateway, not by the client: not the client's to see.
                  if (!request.includeUsage && Array.isArray(chunk["choices"]) && chunk["choices"].length === 0) continue
                }
              }
              pass(frame, out)
            }
          },
          finish: (early, out) => {
            if (done && early === undefined) return
            const ending = early ?? (finished ? undefined : UNFINISHED)
            if (ending !== undefined) out.event("error", errorData(ending.code, ending.message))
            out.event("done", DONE_DATA)
          },
          halt: budgetHalt(input.budget, () => roughChatTokens(request.body), () => sent.length)
        }, () => new ChatSseBytes(), lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
        return {
          answer: frames,
          usage: meteredAtEnd(
            // A stream cut before the server's usage chunk is billed for its input and what it sent.
            () => serverUsage ?? estimatedUsage(principal.group.name, chatTexts(request.body), sent),
            () => answered
          )
        }
      }

      const chatPlan: ChatPlan = { build, json, stream }
      return chatPlan
    })
  return plan
})
