/**
 * A Responses create through the admitted turn, whatever transport carried it (HTTP or a WebSocket
 * turn): the group's platform picks the plan (passthrough or translation), the client's headers give
 * the session, and the core does the rest. The transport encodes the answer.
 */
import { Effect } from "effect"
import { makeAdmitTurn } from "../../core/admittedTurn.js"
import type { Rendered } from "../../core/settlement.js"
import type { TurnAnswer } from "../../core/upstreamCall.js"
import type { GatewayError } from "../../domain/errors.js"
import type { ClientHeaders } from "../../domain/forwardHeaders.js"
import type { Principal } from "../../domain/model.js"
import { sessionOf } from "../../domain/session.js"
import { makeAnthropicPlanner } from "./anthropicPlan.js"
import { makeOpenAIPlanner, type ResponsesPlan } from "./openaiPlan.js"
import { moderationTexts, providerTools, roughInputTokens, wantsImageGeneration } from "./policy.js"
import type { ResponsesRequest } from "./validate.js"

export interface ResponsesTurnInput<A> {
  readonly requestId: string
  readonly principal: Principal
  readonly request: ResponsesRequest
  /** The body as it goes upstream: the client's bytes over HTTP, the expanded create on a WebSocket. */
  readonly rawBody: string
  /** What followed `/responses` in the path (e.g. `/compact`). */
  readonly subpath: string
  readonly clientHeaders: ClientHeaders
  /** The transport's encoding of the answer (core/admittedTurn.ts `render`). */
  readonly render: (plan: ResponsesPlan, answer: TurnAnswer) => Effect.Effect<Rendered<A>, GatewayError>
}

/** Admits a Responses turn; its services resolved once. */
export const makeResponsesTurn = Effect.gen(function*() {
  const admit = yield* makeAdmitTurn
  const planOpenAI = yield* makeOpenAIPlanner
  const planAnthropic = yield* makeAnthropicPlanner
  return <A>(input: ResponsesTurnInput<A>) => {
    const { principal, request } = input
    const planner = principal.group.platform === "openai" ? planOpenAI : planAnthropic
    const session = sessionOf(principal.key.id, input.clientHeaders, request.body)
    return admit({
      requestId: input.requestId,
      principal,
      policy: {
        model: request.model,
        stream: request.stream,
        texts: () => moderationTexts(request.body),
        wantsImageGeneration: wantsImageGeneration(request.body),
        providerTools: providerTools(request.body, principal.group.platform),
        roughInputTokens: () => roughInputTokens(request.body)
      },
      session,
      plan: ({ budget, metricModel }) =>
        planner({
          requestId: input.requestId,
          principal,
          request,
          rawBody: input.rawBody,
          subpath: input.subpath,
          clientHeaders: input.clientHeaders,
          metricModel,
          budget,
          session
        }),
      render: input.render
    })
  }
})
