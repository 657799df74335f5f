/**
 * The `moderation:` section of the config file: which implementation decides, and its settings.
 * A group's `moderation` mode (off | observe | block) says what to do with the decision.
 */
import { Schema } from "effect"

/** A rule is a word or phrase (matched case-insensitively on word boundaries) or `/regex/flags`. */
export const ModerationRules = Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) })

export const OpenAIModerationConfig = Schema.Struct({
  /** An `openai` account whose base_url and secret are used for `/moderations`. */
  account: Schema.String.pipe(Schema.minLength(1)),
  model: Schema.optionalWith(Schema.String, { default: () => "omni-moderation-latest" }),
  /** Per-category score thresholds; a category without one counts when the endpoint flags it. */
  thresholds: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Number.pipe(Schema.between(0, 1)) }), {
    default: () => ({})
  }),
  timeout_ms: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.positive()), { default: () => 2000 }),
  /** What an unreachable or failing endpoint means: let the request through, or refuse it. */
  on_error: Schema.optionalWith(Schema.Literal("allow", "block"), { default: () => "allow" as const })
})

export const ModerationConfig = Schema.Struct({
  provider: Schema.optionalWith(Schema.Literal("rules", "openai"), { default: () => "rules" as const }),
  rules: Schema.optionalWith(ModerationRules, { default: () => ({}) }),
  openai: Schema.optional(OpenAIModerationConfig)
})
export type ModerationConfig = typeof ModerationConfig.Type

export const defaultModerationConfig: ModerationConfig = { provider: "rules", rules: {} }
