/**
 * A door's plan for a turn, in one vocabulary for every door: the planner (`Planner`) reads the
 * request as the door decoded it with what admission decided (`PlanInput`), and returns the `Plan`:
 * how the upstream is called, and (in the door's own plan type, which extends it) how the answer
 * is rendered for the door's client. The core runs it once the turn is admitted (admittedTurn.ts).
 */
import type { Effect } from "effect"
import type { InvalidRequest } from "../domain/errors.js"
import type { ClientHeaders } from "../domain/forwardHeaders.js"
import type { Account, Principal } from "../domain/model.js"
import type { TokenUsage } from "../domain/usage.js"
import type { UpstreamRequest } from "../services/upstream/Upstream.js"

/** How far an answer may run on what the key may still spend. */
export interface Budget {
  /** Whether `usage` (what the answer has cost so far) passed the limit. */
  readonly exceeded: (usage: TokenUsage) => boolean
}

/** How the upstream is called for a turn; a door's plan adds its renderers. */
export interface Plan {
  readonly build: (account: Account) => UpstreamRequest
}

/** What a planner reads: the door's request `R` and what admission decided. */
export interface PlanInput<R> {
  readonly requestId: string
  readonly principal: Principal
  readonly request: R
  /** The body as it goes upstream unless the plan rewrites it: the client's bytes over HTTP. */
  readonly rawBody: string
  /** The model as metrics label it: the requested name when configured somewhere, else "other". */
  readonly metricModel: string
  /** How far a stream may run on what the key may still spend (admittedTurn.ts); undefined: unbounded. */
  readonly budget: Budget | undefined
  /** The client's headers, for those that go upstream (src/domain/forwardHeaders.ts). */
  readonly clientHeaders: ClientHeaders
  /** The sticky-session id (domain/session.ts), which also names the upstream's prompt cache. */
  readonly session: string | undefined
}

/** Makes a door's plan `P` from its input `I` (a PlanInput, with what the door adds). */
export type Planner<I extends PlanInput<unknown>, P extends Plan> = (input: I) => Effect.Effect<P, InvalidRequest>
