/**
 * Messages requests for Anthropic groups: passthrough. The body goes to an Anthropic account as the
 * client sent it (re-serialised only when the account maps the model name), with the client's
 * `anthropic-version` and `anthropic-beta`; the answer (JSON or SSE) comes back as it came, but for
 * the model name restored. Usage is read from the answer and settled at the cache prices.
 */
import { Effect, type Stream } from "effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { Settings } from "../../config/AppConfig.js"
import type { Plan, PlanInput, Planner } from "../../core/plan.js"
import { messagesAnswerFacts } from "../../domain/answerFacts.js"
import type { UpstreamFailed } from "../../domain/errors.js"
import { anthropicPassthroughHeaders } from "../../domain/forwardHeaders.js"
import { type Account, upstreamModel } from "../../domain/model.js"
import { messagesToolCalls } from "../../domain/providerTools.js"
import { emptyUsage, withToolCalls } from "../../domain/usage.js"
import { Lifecycle } from "../../services/lifecycle/Lifecycle.js"
import type { UpstreamRequest } from "../../services/upstream/Upstream.js"
import { mayCarryOurThinking, withoutOurThinking } from "../../translate/messages/signature.js"
import { foldUsage } from "../../translate/output.js"
import { json as jsonReply, rawJson } from "../kit/reply.js"
import { answerJson, estimatedUsage } from "../kit/upstreamAnswer.js"
import { meteredAtEnd, type Rendered, reported } from "../../core/settlement.js"
import { relaySse } from "../kit/sseRelay.js"
import type { Answer } from "../../core/upstreamCall.js"
import { MessagesPassthrough } from "./passthroughStream.js"
import { messagesTexts, roughMessagesTokens } from "./policy.js"
import { budgetHalt } from "../kit/budget.js"
import { frameGuard } from "../kit/frameGuard.js"
import type { MessagesRequest } from "./validate.js"

/** A Messages request's plan: the upstream call, and its answer rendered for a Messages client. */
export interface MessagesPlan extends Plan {
  readonly json: (answer: Answer) => Effect.Effect<Rendered<HttpServerResponse.HttpServerResponse>, UpstreamFailed>
  /** The client's SSE frames: never fails, always ends with `message_stop` or an `error` event. */
  readonly stream: (answer: Answer) => Rendered<Stream.Stream<Uint8Array>>
}

export type MessagesPlanner = Planner<PlanInput<MessagesRequest>, MessagesPlan>

export const makeAnthropicPlanner = Effect.gen(function*() {
  const lifecycle = yield* Lifecycle
  const settings = yield* Settings
  const plan: MessagesPlanner = (input) =>
    Effect.sync(() => {
      const { principal, request } = input
      const headers = anthropicPassthroughHeaders(input.clientHeaders)

      // Thinking we signed for an OpenAI group means nothing to Anthropic: such blocks are left out.
      const cleaned = mayCarryOurThinking(input.rawBody) ? withoutOurThinking(request.body) : undefined
      const build = (account: Account): UpstreamRequest => {
        const model = upstreamModel(account, request.model)
        return {
          path: "/v1/messages",
          body: cleaned !== undefined
            ? JSON.stringify({ ...cleaned, model })
            : model === request.model
            ? input.rawBody
            : JSON.stringify({ ...request.body, model }),
          stream: request.stream,
          headers
        }
      }

      const json = (answer: Answer) =>
        Effect.map(answerJson(answer), ({ body, text }) => {
          // Web searches and fetches are in usage.server_tool_use; code execution calls only as blocks.
          const usage = reported(withToolCalls(foldUsage(emptyUsage, body["usage"]), messagesToolCalls(body["content"])), messagesAnswerFacts(body))
          if (body["model"] === request.model || typeof body["model"] !== "string") return { answer: rawJson(text), usage }
          body["model"] = request.model
          return { answer: jsonReply(body), usage }
        })

      const stream = (answer: Answer): Rendered<Stream.Stream<Uint8Array>> => {
        const state = new MessagesPassthrough(request.model)
        // Billed as reported; a stream cut before its output was reported keeps message_start's
        // exact input and estimates the output sent (or, with no message_start, both).
        const usage = meteredAtEnd(() => {
          const reported = state.reportedUsage()
          if (reported !== undefined) return reported
          const start = state.startUsage()
          const estimate = estimatedUsage(principal.group.name, start === undefined ? messagesTexts(request.body) : [], state.outputSoFar())
          return Effect.map(
            estimate,
            (u) => withToolCalls(start === undefined ? u : { ...start, outputTokens: u.outputTokens }, state.toolCallsSoFar())
          )
        }, () => state.answerFacts())
        const frames = relaySse(answer.response.body, {
          guard: frameGuard(answer.account),
          frames: (frames, out) => {
            for (const frame of frames) state.onFrame(frame, out)
          },
          finish: (early, out) => state.finish(early, out),
          // message_start's exact input once it came, else the rough count.
          halt: budgetHalt(input.budget, () => state.startUsage()?.inputTokens ?? roughMessagesTokens(request.body), () => state.outputCharsSoFar())
        }, lifecycle.pastDrainDeadline, settings.maxSseEventBytes)
        return { answer: frames, usage }
      }

      const messagesPlan: MessagesPlan = { build, json, stream }
      return messagesPlan
    })
  return plan
})
