/**
 * What a turn came to, as values the core returns (the access log, the request metric and the
 * request's span read them): the upstream attempts with their accounts, statuses and latencies,
 * the rate-limit headers of its admission, and what its settlement recorded.
 */
import { Data, Effect } from "effect"
import type { AnswerFacts } from "../domain/answerFacts.js"
import type { GatewayError } from "../domain/errors.js"

/** One upstream attempt: the account tried, its answer's HTTP status (0: none came), the time to it. */
export interface Attempt {
  readonly account: string
  readonly status: number
  /** Until the attempt's answer headers (or its failure). */
  readonly latencyMs: number
}

/** What a settlement recorded: the tokens, and the cost (undefined: journaled, priced when written). */
export interface Settled {
  /** Cache reads and writes included (domain/usage.ts). */
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheCreationTokens: number
  readonly costMicros: number | undefined
}

/** What a turn's answer came to, once it is over. */
export interface TurnOutcome {
  /** In order; the last is the account that answered (or failed last). */
  readonly attempts: ReadonlyArray<Attempt>
  /** Undefined: nothing was rendered to bill (the turn failed, or its wait did). */
  readonly settled: Settled | undefined
  /** What the upstream said of the answer it rendered (its id, model, stop reason), as far as it said. */
  readonly answered?: AnswerFacts | undefined
}

/** What the core tells a door about a turn besides its answer (or its error). */
export interface TurnFacts {
  /** `x-ratelimit-*` of the limits the turn was admitted under: every answer to it carries them. */
  readonly headers: Readonly<Record<string, string>>
  /** Read once the request is over (its settlement done): what the turn came to. */
  readonly outcome: Effect.Effect<TurnOutcome>
}

/**
 * The facts of a call that settles nothing, with no rate-limit headers: a turn refused before it
 * was admitted (no attempts), or an upstream call outside a turn (count_tokens, which sets the
 * headers of its own admission).
 */
export const unsettled = (attempts: ReadonlyArray<Attempt>): TurnFacts => ({
  headers: {},
  outcome: Effect.succeed({ attempts, settled: undefined })
})

/** A turn the core refused or whose call failed: the error for the client, and what the turn came to. */
export class TurnFailed extends Data.TaggedError("TurnFailed")<{
  readonly error: GatewayError
  readonly facts: TurnFacts
}> {}
