/**
 * What a Responses WebSocket connection leaves in the access log, on both HttpServers: one line per
 * turn (a POST, as an HTTP request's) and one for the connection, written when it ends: 101 when it
 * ended by a close handshake (from either side), not 499 client_closed_request as if the client had
 * gone away mid-request.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { waitFor } from "../http/helpers.js"
import { OA_KEY, SERVERS, startWsGateway, WsClient, type WsGateway } from "./helpers.js"

const model = "gpt-5.4"

describe.each(SERVERS)("the access log of a WebSocket connection (%s server)", (server) => {
  const logged: Array<AccessEntry> = []
  const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
  // Connections that must outlive their turns however loaded the machine is; the age limit has a
  // gateway of its own (`aging`), whose connections end 400 ms after they open.
  let gw: WsGateway
  let aging: WsGateway
  beforeAll(async () => {
    gw = await startWsGateway({ server, services: { accessLog }, settings: { websocketMaxAgeMillis: 10 * 60_000 } })
    aging = await startWsGateway({ server, services: { accessLog }, settings: { websocketMaxAgeMillis: 400 } })
  })
  afterAll(async () => {
    await gw.close()
    await aging.close()
  })

  const connectionLines = () => logged.filter((e) => e.method === "GET" && e.path === "/v1/responses")

  it("a connection the client closes with a close frame: its turns as POSTs, the connection as a 101", async () => {
    const from = logged.length
    const client = await WsClient.withKey(gw, OA_KEY)
    expect((await client.turn({ model, input: "one" })).at(-1)?.type).toBe("response.completed")
    expect((await client.turn({ model, input: "two" })).at(-1)?.type).toBe("response.completed")
    await client.close(1000)
    await waitFor(() => logged.slice(from).some((e) => e.method === "GET"))
    const lines = logged.slice(from)
    expect(lines.filter((e) => e.method === "POST").map((e) => [e.status, e.code])).toEqual([[200, "ok"], [200, "ok"]])
    expect(lines.filter((e) => e.method === "GET").map((e) => [e.status, e.code])).toEqual([[101, "ok"]])
    // Each line names the transport, the key and its group: the connection's as its turns'.
    for (const line of lines) {
      expect([line.facts?.door, line.facts?.keyId, line.facts?.group]).toEqual(["responses_ws", "oa-key", "oa"])
    }
  })

  it("a connection the gateway closes (age limit): a 101", async () => {
    const before = connectionLines().length
    const client = await WsClient.withKey(aging, OA_KEY)
    expect((await client.closed).code).toBe(1000)
    await waitFor(() => connectionLines().length === before + 1)
    expect(connectionLines().map((e) => [e.status, e.code]).at(-1)).toEqual([101, "ok"])
  })

  it("a connection the client drops without a close frame: one line", async () => {
    const before = connectionLines().length
    const client = await WsClient.withKey(gw, OA_KEY)
    expect((await client.turn({ model, input: "one" })).at(-1)?.type).toBe("response.completed")
    client.socket.terminate()
    await waitFor(() => connectionLines().length === before + 1)
    // Which one depends on whether the connection's end or the socket's close is seen first.
    expect([[101, "ok"], [499, "client_closed_request"]]).toContainEqual(connectionLines().map((e) => [e.status, e.code]).at(-1))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(connectionLines().length).toBe(before + 1)
  })
})
