import type { GatewayConfig } from "../domain/config.js"

/** The config file as written (defaults not yet applied). */
type ConfigFile = typeof GatewayConfig.Encoded

/** The key printed at start when no config is given. A demo key only works against simulators. */
export const DEMO_KEY = "sk-modelgate-demo-0000000000000000"

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
      moderation: "off"
    },
    {
      name: "demo-anthropic",
      platform: "anthropic",
      billing: "balance",
      allow_image_generation: false,
      rate_multiplier: 1,
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
