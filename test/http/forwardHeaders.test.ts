/**
 * Client headers forwarded upstream, over real sockets: a client sends everything it might (its
 * credentials, both betas, OpenAI's organization and project, cookies, session ids), and the local
 * fake upstream records what arrived. Only the allow-list of src/domain/forwardHeaders.ts gets
 * through; the credentials are always the account's, and OpenAI-Organization / OpenAI-Project only
 * come from the account's config.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type FakeUpstream, type FakeUpstreamRequest, startFakeUpstream } from "../support/fakeUpstream.js"
import { fakeUpstreamConfig, fakeUpstreamEnv, startGateway, type TestGateway } from "../support/gateway.js"

const OPENAI_KEY = "sk-test-openai-0001"
const PLAIN_OPENAI_KEY = "sk-test-openai-plain-0001"
const ANTHROPIC_KEY = "sk-test-anthropic-0001"

/** Everything a client might send besides its key; each case adds the key its own way. */
const clientHeaders = {
  "openai-beta": "responses=experimental",
  "anthropic-beta": "interleaved-thinking-2025-05-14, computer-use-2025-01-24,oauth-2025-04-20,context-1m-2025-08-07",
  "anthropic-version": "2099-01-01",
  "openai-organization": "org-from-client",
  "openai-project": "proj_from_client",
  session_id: "session-from-client",
  cookie: "sid=client",
  "x-custom": "client-only"
}

/** Headers that never reach any upstream from a client. */
const NEVER = ["cookie", "session_id", "x-custom", "x-goog-api-key"] as const

describe("client headers forwarded to the upstream", () => {
  let upstream: FakeUpstream
  let gw: TestGateway

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const base = fakeUpstreamConfig(upstream.url)
    const [openai, anthropic] = base.accounts
    gw = await startGateway({
      config: {
        ...base,
        groups: [...base.groups, { name: "plain", platform: "openai", models: ["gpt-5.4"] }],
        keys: [...base.keys, { key: PLAIN_OPENAI_KEY, user: "alice", group: "plain", name: "plain-key" }],
        accounts: [
          { ...openai, openai_organization: "org-configured", openai_project: "proj_configured" },
          anthropic,
          { ...openai, name: "fake-openai-plain", groups: ["plain"] }
        ]
      },
      env: fakeUpstreamEnv
    })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  /** Posts a Responses body with these headers, reads the whole answer, and returns what the upstream got. */
  const send = async (headers: Record<string, string>, body: Record<string, unknown>): Promise<FakeUpstreamRequest> => {
    const before = upstream.requests.length
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { ...clientHeaders, ...headers, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const text = await res.text()
    expect(res.status, text).toBe(200)
    expect(upstream.requests.length).toBe(before + 1)
    return upstream.requests[before]!
  }

  const expectNone = (seen: FakeUpstreamRequest, names: ReadonlyArray<string>) => {
    for (const name of [...NEVER, ...names]) expect(seen.headers[name], name).toBeUndefined()
  }

  for (const stream of [false, true]) {
    const mode = stream ? "stream" : "JSON"

    it(`OpenAI path (${mode}): OpenAI-Beta forwarded; the account's key, organization and project, never the client's`, async () => {
      const seen = await send(
        { authorization: `Bearer ${OPENAI_KEY}`, "x-api-key": "sk-client-other", "x-goog-api-key": "sk-client-goog" },
        { model: "gpt-5.4", input: "hi", stream }
      )
      expect(seen.path).toBe("/v1/responses")
      expect(seen.headers["authorization"]).toBe("Bearer sk-upstream-openai")
      expect(seen.headers["openai-beta"]).toBe("responses=experimental")
      expect(seen.headers["openai-organization"]).toBe("org-configured")
      expect(seen.headers["openai-project"]).toBe("proj_configured")
      expectNone(seen, ["x-api-key", "anthropic-beta", "anthropic-version"])
    })

    it(`Anthropic path (${mode}): only the allowed anthropic-beta names; the account's key and version`, async () => {
      // The client authenticates with x-api-key: its gateway key, which must not reach the upstream.
      const seen = await send(
        { "x-api-key": ANTHROPIC_KEY, "x-goog-api-key": "sk-client-goog" },
        { model: "claude-sonnet-4-6", input: "hi", stream }
      )
      expect(seen.path).toBe("/v1/messages")
      expect(seen.headers["x-api-key"]).toBe("sk-ant-upstream")
      expect(seen.headers["anthropic-version"]).toBe("2023-06-01")
      expect(seen.headers["anthropic-beta"]).toBe("interleaved-thinking-2025-05-14,context-1m-2025-08-07")
      expectNone(seen, ["authorization", "openai-beta", "openai-organization", "openai-project"])
    })
  }

  it("an OpenAI account with no organization or project configured sends none (the client's are dropped)", async () => {
    const seen = await send({ authorization: `Bearer ${PLAIN_OPENAI_KEY}` }, { model: "gpt-5.4", input: "hi" })
    expect(seen.headers["authorization"]).toBe("Bearer sk-upstream-openai")
    expect(seen.headers["openai-beta"]).toBe("responses=experimental")
    expectNone(seen, ["openai-organization", "openai-project", "x-api-key", "anthropic-beta"])
  })

  it("no allowed anthropic-beta name left: no anthropic-beta header; a client bearer token stays behind", async () => {
    const seen = await send(
      { authorization: `Bearer ${ANTHROPIC_KEY}`, "anthropic-beta": "oauth-2025-04-20,files-api-2025-04-14" },
      { model: "claude-sonnet-4-6", input: "hi" }
    )
    expect(seen.headers["x-api-key"]).toBe("sk-ant-upstream")
    expectNone(seen, ["anthropic-beta", "authorization", "openai-beta"])
  })
})
