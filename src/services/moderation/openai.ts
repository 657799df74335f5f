/**
 * Moderation by an OpenAI-compatible `/moderations` endpoint, through one of the configured openai
 * accounts. Scores are compared with per-category thresholds; a timeout or failure decides by
 * `on_error` (fail open or closed), and is logged either way.
 */
import { Duration, Effect, Redacted } from "effect"
import { request } from "undici"
import { openaiAccountHeaders } from "../../domain/forwardHeaders.js"
import type { Account } from "../../domain/model.js"
import type { ModerationConfig } from "../../domain/moderationConfig.js"
import type { ModerationDecision, ModerationShape } from "./Moderation.js"

type OpenAIOptions = NonNullable<ModerationConfig["openai"]>

interface ModerationResult {
  readonly flagged?: boolean
  readonly categories?: Readonly<Record<string, boolean>>
  readonly category_scores?: Readonly<Record<string, number>>
}

/** The first category over its threshold (or flagged, when it has none), across all results. */
export const decideFromResults = (
  results: ReadonlyArray<ModerationResult>,
  thresholds: Readonly<Record<string, number>>
): ModerationDecision => {
  for (const r of results) {
    for (const [category, threshold] of Object.entries(thresholds)) {
      if ((r.category_scores?.[category] ?? 0) >= threshold) return { _tag: "Flag", category }
    }
    for (const [category, flagged] of Object.entries(r.categories ?? {})) {
      if (flagged && !(category in thresholds)) return { _tag: "Flag", category }
    }
  }
  return { _tag: "Allow" }
}

export const makeOpenAIModeration = (account: Account, options: OpenAIOptions): ModerationShape => {
  const headers: Record<string, string> = { "content-type": "application/json", ...openaiAccountHeaders(account) }
  if (account.secret !== undefined) headers["authorization"] = `Bearer ${Redacted.value(account.secret)}`
  const onError: ModerationDecision = options.on_error === "block"
    ? { _tag: "Flag", category: "moderation_unavailable" }
    : { _tag: "Allow" }
  return {
    check: (texts) => {
      const input = texts.filter((t) => t.trim() !== "")
      if (input.length === 0) return Effect.succeed<ModerationDecision>({ _tag: "Allow" })
      return Effect.tryPromise({
        try: async (signal) => {
          const res = await request(`${account.baseUrl}/moderations`, {
            method: "POST",
            headers,
            body: JSON.stringify({ model: options.model, input }),
            signal
          })
          const body = (await res.body.json()) as { results?: ReadonlyArray<ModerationResult> }
          if (res.statusCode !== 200) throw new Error(`moderation endpoint answered ${res.statusCode}`)
          return decideFromResults(body.results ?? [], options.thresholds)
        },
        catch: (e) => e
      }).pipe(
        Effect.timeoutOrElse({ duration: Duration.millis(options.timeout_ms), orElse: () => Effect.fail(new Error("timed out")) }),
        Effect.catch((e: unknown) =>
          Effect.logWarning("moderation endpoint failed; applying on_error").pipe(
            Effect.annotateLogs({ account: account.name, on_error: options.on_error, reason: String(e) }),
            Effect.as(onError)
          )
        )
      )
    }
  }
}
