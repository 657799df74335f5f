import type { GatewayConfig } from "../domain/config.js"

/** The config file as written (defaults not yet applied). */
type ConfigFile = typeof GatewayConfig.Encoded

/** The key printed at start when no config is given. A demo key only works against simulators. */
export const DEMO_KEY = "sk-modelgate-demo-0000000000000000"

/**
 * What the demo groups offer. A group that lists its models refuses any other with 404
 * model_not_found, as a real configuration would; these cover the README's examples, the start
 * banner, and the names Claude Code asks for (`--model`, its default models and its small fast model).
 */
const demoOpenAIModels = ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.3-codex", "gpt-5.2"]
const demoAnthropicModels = [
  "claude-opus-5-5",
  "claude-sonnet-5-5",
  "claude-opus-4-8",
  "claude-opus-4-7",
  "claude-opus-4-6",
  "claude-sonnet-4-6",
  "claude-sonnet-4-5",
  "claude-sonnet-4-5-20250929",
  "claude-haiku-4-5",
  "claude-haiku-4-5-20251001"
]

/**
 * With no config file, `npm start` serves this: one group per platform, each backed by a simulator
 * account, so a newcomer sees a streamed answer with no credentials and no network.
 */
export const demoConfig: ConfigFile = {
  groups: [
    {
      name: "demo-openai",
      platform: "openai",
      billing: "balance",
      allow_image_generation: false,
      rate_multiplier: 1,
      models: demoOpenAIModels,
      moderation: "off"
    },
    {
      name: "demo-anthropic",
      platform: "anthropic",
      billing: "balance",
      allow_image_generation: false,
      rate_multiplier: 1,
      models: demoAnthropicModels,
      moderation: "off"
    }
  ],
  users: [{ name: "demo", balance_usd: 100, concurrency: 8 }],
  keys: [
    { key: DEMO_KEY, user: "demo", group: "demo-openai", name: "demo-openai", status: "active" },
    {
      key: "sk-modelgate-demo-anthropic-000000",
      user: "demo",
      group: "demo-anthropic",
      name: "demo-anthropic",
      status: "active"
    }
  ],
  accounts: [
    {
      name: "simulator-openai",
      platform: "openai",
      kind: "simulator",
      groups: ["demo-openai"],
      priority: 50,
      concurrency: 64
    },
    {
      name: "simulator-anthropic",
      platform: "anthropic",
      kind: "simulator",
      groups: ["demo-anthropic"],
      priority: 50,
      concurrency: 64
    }
  ]
}
