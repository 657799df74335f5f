/**
 * Moderation decides on a request's text; the group's mode (off | observe | block) is applied by the
 * responses pipeline, not here. Implementations: rules (embedded default), the OpenAI moderation
 * endpoint, and a test layer.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import type { GatewayData } from "../config/resolve.js"
import { makeOpenAIModeration } from "./moderation/openai.js"
import { makeRules } from "./moderation/rules.js"

export type ModerationDecision =
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Flag"; readonly category: string }

export interface ModerationShape {
  readonly check: (texts: ReadonlyArray<string>) => Effect.Effect<ModerationDecision>
}

export { makeRules }

/** The implementation the configuration asks for (checked at start by resolveConfig). */
export const fromData = (data: GatewayData): ModerationShape => {
  const config = data.moderation
  if (config.provider === "openai" && config.openai !== undefined) {
    const account = data.accounts.find((a) => a.name === config.openai!.account)
    if (account !== undefined) return makeOpenAIModeration(account, config.openai)
  }
  return makeRules(config.rules)
}

export class Moderation extends Context.Tag("modelgate/Moderation")<Moderation, ModerationShape>() {
  /** As configured: rules by default, the OpenAI endpoint when `moderation.provider: openai`. */
  static readonly layer = Layer.effect(Moderation, Effect.map(AppConfig, (c) => fromData(c.data)))
  static readonly layerTest = (decide: (texts: ReadonlyArray<string>) => ModerationDecision) =>
    Layer.succeed(Moderation, { check: (texts) => Effect.sync(() => decide(texts)) })
}
