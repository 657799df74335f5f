/**
 * A gateway with one group per upstream platform, each on a local fake speaking the real wire
 * format: `openai` (Responses) and `anthropic` (Messages) on the fake upstream, `openai_chat` on the
 * fake Chat server. For the Chat door's client tests, which run on every group.
 */
import { type ChatUpstream, startChatUpstream } from "../support/chatUpstream.js"
import { type FakeUpstream, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"

export const GROUPS = [
  { name: "openai group", key: "sk-test-openai-0001", model: "gpt-5.4" },
  { name: "anthropic group", key: "sk-test-anthropic-0001", model: "claude-sonnet-4-5" },
  { name: "openai_chat group", key: "sk-test-chat-0001", model: "qwen3-coder" }
] as const

export interface ThreeGroups {
  readonly gw: TestGateway
  readonly upstream: FakeUpstream
  readonly chat: ChatUpstream
  readonly close: () => Promise<void>
}

export const startThreeGroups = async (): Promise<ThreeGroups> => {
  const upstream = await startFakeUpstream()
  const chat = await startChatUpstream()
  const base = fakeUpstreamConfig(upstream.url)
  const gw = await startGateway({
    config: {
      ...base,
      groups: [...base.groups, { name: "local", platform: "openai_chat", models: ["qwen3-coder"] }],
      keys: [...base.keys, { key: "sk-test-chat-0001", user: "alice", group: "local", name: "chat-key" }],
      accounts: [...base.accounts, { name: "fake-chat", platform: "openai_chat", base_url: `${chat.url}/v1`, groups: ["local"] }]
    },
    env: fakeUpstreamEnv
  })
  return {
    gw,
    upstream,
    chat,
    close: async () => {
      await gw.close()
      await upstream.close()
      await chat.close()
    }
  }
}
