/**
 * Moderation decides on a request's text; the group's mode (off | observe | block) is applied by the
 * responses pipeline, not here. This is the contract; implementations: rules.ts (the embedded
 * default), openai.ts (the OpenAI moderation endpoint), configured.ts (the one the config picks).
 */
import { Context, Effect, Layer } from "effect"

export type ModerationDecision =
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Flag"; readonly category: string }

export interface ModerationShape {
  readonly check: (texts: ReadonlyArray<string>) => Effect.Effect<ModerationDecision>
}

export class Moderation extends Context.Service<Moderation, ModerationShape>()("modelgate/Moderation") {
  static readonly layerTest = (decide: (texts: ReadonlyArray<string>) => ModerationDecision) =>
    Layer.succeed(Moderation, { check: (texts) => Effect.sync(() => decide(texts)) })
}
