/**
 * The Moderation the configuration asks for (checked at start by resolveConfig): the embedded
 * rules by default, the OpenAI endpoint when `moderation.provider: openai`.
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../../config/AppConfig.js"
import type { GatewayData } from "../../config/resolve.js"
import { Moderation, type ModerationShape } from "./Moderation.js"
import { makeOpenAIModeration } from "./openai.js"
import { makeRules } from "./rules.js"

/** The implementation the configuration asks for (checked at start by resolveConfig). */
export const fromData = (data: GatewayData): ModerationShape => {
  const config = data.moderation
  if (config.provider === "openai" && config.openai !== undefined) {
    const account = data.accounts.find((a) => a.name === config.openai!.account)
    if (account !== undefined) return makeOpenAIModeration(account, config.openai)
  }
  return makeRules(config.rules)
}

export const layer = Layer.effect(Moderation, Effect.map(AppConfig, (c) => fromData(c.data)))
