/**
 * The Chat door's plan type and what both of its plans share: the request translated once to a
 * Responses body before admission (a request the translation cannot express is refused before any
 * cost), the `[DONE]`-terminated stream, and the clock Chat's `created` reads.
 */
import type { Effect, Stream } from "effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { Plan, PlanInput, Planner } from "../../core/plan.js"
import type { Rendered } from "../../core/settlement.js"
import type { Answer } from "../../core/upstreamCall.js"
import type { UpstreamFailed } from "../../domain/errors.js"
import type { ChatRequest } from "./validate.js"

/** A Chat request as the door admits it: validated, and its Responses translation. */
export interface ChatTurnRequest extends ChatRequest {
  /** The request as a Responses body (src/translate/chat/request.ts). */
  readonly responses: Record<string, unknown>
}

export interface ChatPlan extends Plan {
  readonly json: (answer: Answer) => Effect.Effect<Rendered<HttpServerResponse.HttpServerResponse>, UpstreamFailed>
  /** The client's SSE bytes: never fails, always ends with a finish (or error) frame and `[DONE]`. */
  readonly stream: (answer: Answer) => Rendered<Stream.Stream<Uint8Array>>
}

export type ChatPlanner = Planner<PlanInput<ChatTurnRequest>, ChatPlan>
