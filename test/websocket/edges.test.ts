/**
 * Edges of the Responses WebSocket transport (issue 26, item 9): a message nested ~5,000 levels
 * deep (a turn or a warm-up) is an error event 400 and the connection goes on; a handshake on a
 * subpath the HTTP door refuses (overlong UTF-8, dot segments) is refused with the 400 envelope
 * before any upgrade.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { OA_KEY, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

const model = "gpt-5.4"
const DEPTH = 5_000

/** `depth` nested arrays, as text (JSON.stringify would recurse as deep). */
const deep = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`

/** `response.create` messages whose `field` nests DEPTH levels deep. */
const deepCreate = (field: string, warmUp: boolean) =>
  `{"type":"response.create","model":"${model}"${warmUp ? `,"generate":false` : ""},"${field}":${deep(DEPTH)}}`

/**
 * A WebSocket handshake for `path` written byte for byte (a WebSocket client would normalise the
 * path first); what came back, once the server closed the connection or 2 s passed.
 */
const rawHandshake = (url: string, path: string): Promise<string> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: gateway\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${OA_KEY}\r\n\r\n`
      ))
    let answer = ""
    socket.on("data", (d: Buffer) => void (answer += d.toString("utf8")))
    socket.on("error", () => undefined)
    const timer = setTimeout(() => socket.destroy(), 2_000)
    socket.on("close", () => {
      clearTimeout(timer)
      resolve(answer)
    })
  })

describe("WebSocket edges", () => {
  let gw: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway()
  })
  afterAll(() => gw.close())

  // A warm-up echoes its tools and instructions in its answer.
  for (const [what, field, warmUp] of [
    ["a turn's input", "input", false],
    ["a warm-up's input", "input", true],
    ["a warm-up's tools", "tools", true],
    ["a warm-up's instructions", "instructions", true]
  ] as const) {
    it(`${what} nested ${DEPTH} levels deep: an error event 400, and the connection serves the next turn`, async () => {
      const client = await WsClient.withKey(gw, OA_KEY)
      try {
        const requestsBefore = gw.upstream.requests.length
        client.send(deepCreate(field, warmUp))
        const { events } = await client.readTurn()
        expect(events).toHaveLength(1)
        expect(events[0]).toMatchObject({ type: "error", status: 400, error: { type: "invalid_request_error", code: "invalid_json" } })
        expect(gw.upstream.requests.length).toBe(requestsBefore)
        expect((await client.turn({ model, input: "still there?" })).at(-1)?.type).toBe("response.completed")
        expect(client.closeInfo).toBeUndefined()
      } finally {
        await client.close()
      }
    })
  }

  for (const path of ["/v1/responses/%c0%ae%c0%ae", "/v1/responses/../models", "/responses/%2e%2e", "/v1/responses//x"]) {
    it(`a handshake on ${path}: the 400 invalid_path envelope, no upgrade`, async () => {
      const answer = await rawHandshake(gw.url, path)
      expect(answer).toMatch(/^HTTP\/1\.1 400 /)
      expect(answer).toMatch(/\r\ncontent-type: application\/json/i)
      const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { error: { type: string; code: string } }
      expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_path" })
    })
  }
})
