/**
 * The embedded rules moderation: per-category lists of phrases and regular expressions. Phrases match
 * case-insensitively on word boundaries, so "kill" does not flag "skill".
 */
import { Effect } from "effect"
import { compileRule } from "../../domain/moderationRules.js"
import type { ModerationDecision, ModerationShape } from "./Moderation.js"

const allow: ModerationDecision = { _tag: "Allow" }

export const makeRules = (rules: Readonly<Record<string, ReadonlyArray<string>>>): ModerationShape => {
  const compiled = Object.entries(rules)
    .map(([category, list]) => ({ category, patterns: list.filter((r) => r.trim() !== "").map(compileRule) }))
    .filter((c) => c.patterns.length > 0)
  if (compiled.length === 0) return { check: () => Effect.succeed(allow) }
  return {
    check: (texts) =>
      Effect.sync((): ModerationDecision => {
        for (const text of texts) {
          for (const { category, patterns } of compiled) {
            if (patterns.some((p) => p.test(text))) return { _tag: "Flag", category }
          }
        }
        return allow
      })
  }
}
