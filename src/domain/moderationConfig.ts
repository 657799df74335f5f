/**
 * The `moderation:` section of the config file: which implementation decides, and its settings.
 * A group's `moderation` mode (off | observe | block) says what to do with the decision.
 */
import { Effect, Schema } from "effect"

/** Absent (or undefined) decodes to `value` (v3's optionalWith default; config.ts imports this module, so it is defined here). */
export const withDefault = <S extends Schema.Constraint>(value: S["Type"]) => Schema.withDecodingDefaultType<S>(Effect.succeed(value))

/** A rule is a word or phrase (matched case-insensitively on word boundaries) or `/regex/flags`. */
export const ModerationRules = Schema.Record(Schema.String, Schema.Array(Schema.String))

export const OpenAIModerationConfig = Schema.Struct({
  /** An `openai` account whose base_url and secret are used for `/moderations`. */
  account: Schema.String.check(Schema.isMinLength(1)),
  model: Schema.String.pipe(withDefault("omni-moderation-latest")),
  /** Per-category score thresholds; a category without one counts when the endpoint flags it. */
  thresholds: Schema.Record(Schema.String, Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 }))).pipe(
    withDefault({})
  ),
  timeout_ms: Schema.Int.check(Schema.isGreaterThan(0)).pipe(withDefault(2000)),
  /** What an unreachable or failing endpoint means: let the request through, or refuse it. */
  on_error: Schema.Literals(["allow", "block"]).pipe(withDefault("allow"))
})

export const ModerationConfig = Schema.Struct({
  provider: Schema.Literals(["rules", "openai"]).pipe(withDefault("rules")),
  rules: ModerationRules.pipe(withDefault({})),
  openai: Schema.optional(OpenAIModerationConfig)
})
export type ModerationConfig = typeof ModerationConfig.Type

export const defaultModerationConfig: ModerationConfig = { provider: "rules", rules: {} }
