/**
 * The handshake's headers on each turn's upstream request: a turn carries what the same client's
 * HTTP request would (its OpenAI-Beta opt-ins), but not the WebSocket protocol's own version beta
 * (`OpenAI-Beta: responses_websockets=2026-02-06`, which Codex sends on the handshake, §1.1): the
 * turn reaches the upstream as an HTTP request, where that beta means nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call } from "../http/helpers.js"
import { OA_KEY, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

const model = "gpt-5.4"

describe("handshake headers on the turns' upstream requests", () => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway()
  })
  afterAll(() => gw.close())

  const upstreamBetaOfTurn = async (beta: string): Promise<unknown> => {
    const client = await WsClient.withKey(gw, OA_KEY, "/v1/responses", { "openai-beta": beta })
    try {
      expect((await client.turn({ model, input: "hi" })).at(-1)?.type).toBe("response.completed")
      return gw.upstream.requests.at(-1)?.headers["openai-beta"]
    } finally {
      await client.close()
    }
  }

  const upstreamBetaOfHttp = async (beta: string): Promise<unknown> => {
    const res = await call(gw.url, "/v1/responses", { key: OA_KEY, headers: { "openai-beta": beta }, body: { model, input: "hi" } })
    expect(res.status).toBe(200)
    return gw.upstream.requests.at(-1)?.headers["openai-beta"]
  }

  it("Codex's handshake beta alone: no OpenAI-Beta upstream", async () => {
    expect(await upstreamBetaOfTurn("responses_websockets=2026-02-06")).toBeUndefined()
  })

  it("other betas next to it go upstream as over HTTP", async () => {
    expect(await upstreamBetaOfTurn("responses_websockets=2026-02-06, assistants=v2")).toBe(await upstreamBetaOfHttp("assistants=v2"))
    expect(await upstreamBetaOfTurn("assistants=v2")).toBe("assistants=v2")
  })
})
