/**
 * Moderation decides on a request's text; the group's mode (off | observe | block) is applied by the
 * responses pipeline policy, not here.
 */
import { Context, Effect, Layer } from "effect"

export type ModerationDecision =
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Flag"; readonly category: string }

export interface ModerationShape {
  readonly check: (texts: ReadonlyArray<string>) => Effect.Effect<ModerationDecision>
}

export const allow: ModerationDecision = { _tag: "Allow" }

/** Case-insensitive substring rules per category: the embedded default until configured rules land. */
export const makeRules = (rules: Readonly<Record<string, ReadonlyArray<string>>>): ModerationShape => {
  const compiled = Object.entries(rules).map(([category, words]) => ({
    category,
    words: words.map((w) => w.toLowerCase())
  }))
  return {
    check: (texts) =>
      Effect.sync(() => {
        for (const text of texts) {
          const lower = text.toLowerCase()
          for (const { category, words } of compiled) {
            if (words.some((w) => lower.includes(w))) return { _tag: "Flag", category }
          }
        }
        return allow
      })
  }
}

export class Moderation extends Context.Tag("modelgate/Moderation")<Moderation, ModerationShape>() {
  /** The rules implementation with no rules configured: allows everything. */
  static readonly layer = Layer.succeed(Moderation, makeRules({}))
  static readonly layerTest = (decide: (texts: ReadonlyArray<string>) => ModerationDecision) =>
    Layer.succeed(Moderation, { check: (texts) => Effect.sync(() => decide(texts)) })
}
