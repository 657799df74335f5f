/**
 * The Responses WebSocket handshake on both HttpServers (lean and the platform's NodeHttpServer):
 * the key is checked before the upgrade (a bad or missing key gets the HTTP 401 envelope, no 101), a
 * group with `websocket: false` gets 426 websocket_not_supported (Codex falls back to HTTP), a GET
 * that is no upgrade gets 405 (so does one with `Upgrade: websocket` but no `upgrade` token in
 * `Connection`, which the server does not hand over), an accepted handshake selects no subprotocol
 * on the responses paths, and a handshake the WebSocket library would refuse (bad Sec-WebSocket-Key,
 * -Version or -Protocol) is answered with a 400 envelope (invalid_websocket_handshake) and leaves
 * nothing running that would hold up the gateway's shutdown.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { call, expectEnvelope, rawAsAnswer } from "../http/helpers.js"
import { fakeUpstreamConfig } from "../support/gateway.js"
import { OA_KEY, type Refused, SERVERS, startWsGateway, usageTotals, WsClient, type WsGateway } from "./helpers.js"

const NO_WS_KEY = "sk-test-nows-0001"

const config = (upstreamUrl: string) => {
  const base = fakeUpstreamConfig(upstreamUrl)
  return {
    ...base,
    groups: [...base.groups, { name: "nows", platform: "openai", models: ["gpt-5.4"], websocket: false }],
    keys: [...base.keys, { key: NO_WS_KEY, user: "alice", group: "nows", name: "nows-key" }],
    accounts: base.accounts.map((a) => (a.platform === "openai" ? { ...a, groups: [...a.groups, "nows"] } : a))
  }
}

const asAnswer = (r: Refused) => rawAsAnswer({ status: r.status, headers: r.headers, text: r.text, elapsedMs: 0 })

describe.each(SERVERS)("the handshake (%s server)", (server) => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ server, config })
  })
  afterAll(() => gw.close())

  it("a bad key gets the 401 envelope, not a 101", async () => {
    const refused = await WsClient.refusal(`${gw.wsUrl}/v1/responses`, { authorization: "Bearer sk-not-a-key-000000000" })
    expectEnvelope(asAnswer(refused), { status: 401, type: "authentication_error", code: "invalid_api_key" })
  })

  it("no key gets 401 too", async () => {
    const refused = await WsClient.refusal(`${gw.wsUrl}/v1/responses`)
    expectEnvelope(asAnswer(refused), { status: 401, type: "authentication_error", code: "missing_api_key" })
  })

  it("x-api-key authenticates the handshake as on HTTP", async () => {
    const client = await WsClient.connect(`${gw.wsUrl}/v1/responses`, { "x-api-key": OA_KEY })
    const events = await client.turn({ model: "gpt-5.4", input: "hi" })
    expect(events.at(-1)?.type).toBe("response.completed")
    await client.close()
  })

  it("a group with websocket: false gets 426 websocket_not_supported (the key is fine over HTTP)", async () => {
    const refused = await WsClient.refusal(`${gw.wsUrl}/v1/responses`, { authorization: `Bearer ${NO_WS_KEY}` })
    expectEnvelope(asAnswer(refused), { status: 426, type: "invalid_request_error", code: "websocket_not_supported" })
    const http = await call(gw.url, "/v1/responses", { key: NO_WS_KEY, body: { model: "gpt-5.4", input: "hi" } })
    expect(http.status).toBe(200)
  })

  it("a GET without an upgrade is a 405 envelope", async () => {
    const res = await call(gw.url, "/v1/responses", { key: OA_KEY })
    expectEnvelope(res, { status: 405, type: "invalid_request_error", code: "method_not_allowed" })
  })

  it("a refused handshake is no usage", async () => {
    const before = await usageTotals(gw.url, NO_WS_KEY)
    await WsClient.refusal(`${gw.wsUrl}/v1/responses`, { authorization: `Bearer ${NO_WS_KEY}` })
    expect(await usageTotals(gw.url, NO_WS_KEY)).toEqual(before)
  })

  for (const path of ["/v1/responses", "/responses", "/backend-api/codex/responses", "/v1/responses/compact"]) {
    it(`upgrades on ${path} with no subprotocol and serves a turn`, async () => {
      const client = await WsClient.withKey(gw, OA_KEY, path)
      expect(client.socket.protocol).toBe("")
      const events = await client.turn({ model: "gpt-5.4", input: "hi" })
      expect(events.map((e) => e.type)[0]).toBe("response.created")
      expect(events.at(-1)?.type).toBe("response.completed")
      await client.close()
    })
  }
})

/** Writes `request` on a fresh TCP connection; resolves with what came back once the server closed it or after `waitMs`. */
const rawExchange = (url: string, request: string, waitMs = 1_500): Promise<string> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () => socket.write(request))
    let answer = ""
    socket.on("data", (d: Buffer) => {
      answer += d.toString("utf8")
    })
    socket.on("error", () => undefined)
    const timer = setTimeout(() => socket.destroy(), waitMs)
    socket.on("close", () => {
      clearTimeout(timer)
      resolve(answer)
    })
  })

const handshake = (headers: Record<string, string>): string =>
  `GET /v1/responses HTTP/1.1\r\nHost: gateway\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`

const GOOD_KEY = "dGhlIHNhbXBsZSBub25jZQ=="

describe.each(SERVERS)("broken handshakes (%s server)", (server) => {
  it("Upgrade: websocket without Connection: upgrade is a plain GET: 405 envelope, not a 500", async () => {
    const gw = await startWsGateway({ server })
    try {
      const answer = await rawExchange(gw.url, handshake({
        Upgrade: "websocket",
        Connection: "close",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": GOOD_KEY,
        Authorization: `Bearer ${OA_KEY}`
      }))
      expect(answer).toMatch(/^HTTP\/1\.1 405 /)
      const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { error: { code: string } }
      expect(body.error.code).toBe("method_not_allowed")
    } finally {
      await gw.close()
    }
  })

  for (const [name, headers] of [
    ["a malformed Sec-WebSocket-Key", { "Sec-WebSocket-Key": "not-a-key" }],
    ["no Sec-WebSocket-Key", {}],
    ["an unknown Sec-WebSocket-Version", { "Sec-WebSocket-Key": GOOD_KEY, "Sec-WebSocket-Version": "7" }],
    ["a Sec-WebSocket-Protocol that is no token", { "Sec-WebSocket-Key": GOOD_KEY, "Sec-WebSocket-Protocol": "responses_websockets=2026-02-06" }],
    ["a Sec-WebSocket-Protocol offered twice", { "Sec-WebSocket-Key": GOOD_KEY, "Sec-WebSocket-Protocol": "a, a" }]
  ] as const) {
    it(`${name}: a 400 envelope, and the gateway still shuts down promptly`, async () => {
      const gw = await startWsGateway({ server })
      let closed = false
      try {
        const answer = await rawExchange(gw.url, handshake({
          Upgrade: "websocket",
          Connection: "Upgrade",
          "Sec-WebSocket-Version": "13",
          ...headers,
          Authorization: `Bearer ${OA_KEY}`
        }))
        expect(answer).toMatch(/^HTTP\/1\.1 400 /)
        const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { error: Record<string, unknown> }
        expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_websocket_handshake", param: null })
        // Still serving.
        const client = await WsClient.withKey(gw, OA_KEY)
        expect((await client.turn({ model: "gpt-5.4", input: "hi" })).at(-1)?.type).toBe("response.completed")
        await client.close()
        const started = Date.now()
        await gw.close()
        closed = true
        expect(Date.now() - started).toBeLessThan(8_000)
      } finally {
        if (!closed) await gw.close()
      }
    }, 15_000)
  }
})
