/**
 * What a request came to, filled in by the steps that learn it (who called, which account answered,
 * what it cost) and read once the request is over by the access log (and the request's span).
 *
 * One plain mutable record per request, made by the gateway app and provided as a Context.Reference
 * (`Effect.provideService(currentRequestFacts, facts)`), like the request id: cheaper than threading
 * a service through every step, and the steps that write it hold it directly (the settlement after
 * the answer may run on another fiber).
 */
import { Context, Effect, type Tracer } from "effect"

export interface RequestFacts {
  /** Which door served the request: `responses`, `responses_ws` or `messages` (none for other routes). */
  door: "responses" | "responses_ws" | "messages" | undefined
  /** The key's id (its configured name, or an id derived from its hash): never key material. */
  keyId: string | undefined
  group: string | undefined
  model: string | undefined
  /** The account of the last upstream attempt. */
  account: string | undefined
  /** The last attempt's HTTP status (0: no answer came). */
  upstreamStatus: number | undefined
  attempts: number
  /** Until the last attempt's answer headers (or its failure). */
  upstreamLatencyMs: number | undefined
  inputTokens: number | undefined
  outputTokens: number | undefined
  costMicros: number | undefined
  /** Headers every answer to the request carries from here on (the `x-ratelimit-*` of its limits). */
  headers: Readonly<Record<string, string>> | undefined
  /** The request's span when tracing is on (observability/tracing.ts); undefined: make no spans. */
  span: Tracer.Span | undefined
}

export const newRequestFacts = (): RequestFacts => ({
  door: undefined,
  keyId: undefined,
  group: undefined,
  model: undefined,
  account: undefined,
  upstreamStatus: undefined,
  attempts: 0,
  upstreamLatencyMs: undefined,
  inputTokens: undefined,
  outputTokens: undefined,
  costMicros: undefined,
  headers: undefined,
  span: undefined
})

/** The facts of the request being served; undefined outside the gateway app. */
export const currentRequestFacts: Context.Reference<RequestFacts | undefined> = Context.Reference<RequestFacts | undefined>(
  "modelgate/RequestFacts",
  { defaultValue: () => undefined }
)

/** The facts of the request this fiber serves (a throwaway record outside the gateway app, e.g. in a unit test). */
export const requestFacts: Effect.Effect<RequestFacts> = currentRequestFacts.useSync((facts) => facts ?? newRequestFacts())
