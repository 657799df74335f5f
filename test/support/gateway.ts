/**
 * Starts a real gateway on 127.0.0.1:<random port> from a config object and optional service
 * overrides, for tests that talk to it over a socket (curl-like fetch, or the openai SDK).
 */
import { Effect, Layer, ManagedRuntime, Result } from "effect"
import { AppConfig, Settings, type SettingsShape } from "../../src/config/AppConfig.js"
import { decodeConfig } from "../../src/config/load.js"
import type { GatewayData } from "../../src/config/resolve.js"
import { GatewayServer } from "../../src/server/GatewayServer.js"
import { gatewayLayer, type ServiceOverrides, type Services } from "../../src/layers.js"
import { startFakeUpstream } from "./fakeUpstream.js"

export interface TestGateway {
  readonly url: string
  readonly data: GatewayData
  readonly runtime: ManagedRuntime.ManagedRuntime<Services | GatewayServer, unknown>
  readonly close: () => Promise<void>
}

export const testData = (config: unknown, env: Record<string, string> = {}): GatewayData =>
  Result.getOrThrowWith(decodeConfig(config, "test", env), (e) => new Error(e.message))

export const startGateway = async (options: {
  readonly config: unknown
  readonly env?: Record<string, string>
  readonly services?: ServiceOverrides
  readonly settings?: Partial<SettingsShape>
}): Promise<TestGateway> => {
  const data = testData(options.config, options.env)
  const layer = gatewayLayer(options.services).pipe(
    Layer.provide(AppConfig.layer(data, "test")),
    Layer.provide(Settings.layer(options.settings))
  )
  const runtime = ManagedRuntime.make(layer)
  const server = await runtime.runPromise(Effect.service(GatewayServer))
  return { url: server.url, data, runtime, close: () => runtime.dispose() }
}

/** A config with one group per platform, both on local fake upstream accounts. */
export const fakeUpstreamConfig = (upstreamUrl: string) => ({
  groups: [
    { name: "oa", platform: "openai", models: ["gpt-5.4", "gpt-5.4-mini", "gpt-image-1"] },
    { name: "an", platform: "anthropic" }
  ],
  users: [{ name: "alice", balance_usd: 50, concurrency: 4 }],
  keys: [
    { key: "sk-test-openai-0001", user: "alice", group: "oa", name: "oa-key" },
    { key: "sk-test-anthropic-0001", user: "alice", group: "an", name: "an-key" }
  ],
  accounts: [
    {
      name: "fake-openai",
      platform: "openai",
      base_url: `${upstreamUrl}/v1`,
      api_key_env: "FAKE_OPENAI_KEY",
      groups: ["oa"],
      model_mapping: { "gpt-5.4": "gpt-5.4-2026-03-01", "gpt-5.4-mini": "gpt-5.4-mini", "gpt-image-1": "gpt-image-1" }
    },
    {
      name: "fake-anthropic",
      platform: "anthropic",
      base_url: upstreamUrl,
      api_key_env: "FAKE_ANTHROPIC_KEY",
      groups: ["an"]
    }
  ]
})

export const fakeUpstreamEnv = { FAKE_OPENAI_KEY: "sk-upstream-openai", FAKE_ANTHROPIC_KEY: "sk-ant-upstream" }

/** A fake upstream and a gateway whose accounts point at it (fakeUpstreamConfig), closed together. */
export const startWithFakeUpstream = async () => {
  const upstream = await startFakeUpstream()
  const gw = await startGateway({ config: fakeUpstreamConfig(upstream.url), env: fakeUpstreamEnv })
  return {
    upstream,
    gw,
    close: async () => {
      await gw.close()
      await upstream.close()
    }
  }
}
