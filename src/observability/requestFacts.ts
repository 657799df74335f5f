import type { AnswerFacts } from "../domain/answerFacts.js"
import type { Platform } from "../domain/config.js"

/**
 * What a request came to, as the access log line and the request's span report it: who called,
 * the model, the upstream attempts, the tokens and the cost. A value, made once the request is over
 * from what its door returned (src/endpoints/kit/door.ts); absent fields: it did not get that far.
 */
export interface RequestFacts {
  /** Which door served the request: `responses`, `responses_ws`, `messages` or `chat`. */
  readonly door: "responses" | "responses_ws" | "messages" | "chat"
  /** The key's id (its configured name, or an id derived from its hash): never key material. */
  readonly keyId: string
  readonly group: string
  /** The group's platform, which its upstream accounts all speak (`openai`, `anthropic`). */
  readonly platform?: Platform | undefined
  readonly model?: string | undefined
  /** The account of the last upstream attempt. */
  readonly account?: string | undefined
  /** The last attempt's HTTP status (0: no answer came). */
  readonly upstreamStatus?: number | undefined
  readonly attempts?: number | undefined
  /** Until the last attempt's answer headers (or its failure). */
  readonly upstreamLatencyMs?: number | undefined
  /** Cache reads and writes included (domain/usage.ts). */
  readonly inputTokens?: number | undefined
  readonly outputTokens?: number | undefined
  readonly cacheReadTokens?: number | undefined
  readonly cacheCreationTokens?: number | undefined
  readonly costMicros?: number | undefined
  /** What the upstream said of its answer: its id, the model that produced it, why it stopped. */
  readonly answer?: AnswerFacts | undefined
}
