/**
 * A client that stops reading cannot hold slots (issue 16, item 3): when a stream's client has
 * taken nothing for STREAM_WRITE_TIMEOUT_MS, the connection is cut, the upstream is let go, the
 * key's slot comes back and the request is logged as 499 client_write_timeout.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { Upstream } from "../../src/services/upstream/Upstream.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { postResponses, waitFor } from "./helpers.js"

const KEY = "sk-write-stall-0001"
const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  // One slot: a stalled stream that kept it would refuse the next request.
  users: [{ name: "alice", balance_usd: 100, concurrency: 1 }],
  keys: [{ key: KEY, user: "alice", group: "oa" }],
  accounts: [{ name: "up", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

const encoder = new TextEncoder()
const delta = (i: number) =>
  encoder.encode(`event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":${i},"delta":"${"x".repeat(64 * 1024)}"}\n\n`)

describe("a client that stops reading its stream", () => {
  let gw: TestGateway
  const logged: Array<AccessEntry> = []
  let upstreamClosed = false
  beforeAll(async () => {
    // An upstream with far more to say than any socket buffer holds: 400 events of 64 KB.
    const upstream = Upstream.layerTest((_account, request) =>
      Effect.succeed({
        status: 200,
        headers: { "content-type": request.stream ? "text/event-stream" : "application/json" },
        body: request.stream
          ? Stream.range(0, 399).pipe(Stream.map(delta), Stream.ensuring(Effect.sync(() => void (upstreamClosed = true))))
          : Stream.succeed(encoder.encode(JSON.stringify(responseObject({ id: "resp_1", createdAt: 1, status: "completed", model: "gpt-5.4" }))))
      }))
    const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
    gw = await startGateway({ config, services: { upstream, accessLog }, settings: { streamWriteTimeoutMillis: 300 } })
  })
  afterAll(() => gw.close())

  it("is cut after STREAM_WRITE_TIMEOUT_MS, logged as 499 client_write_timeout, and its slot comes back", async () => {
    const { hostname, port } = new URL(gw.url)
    const body = JSON.stringify({ model: "gpt-5.4", input: "tell me everything", stream: true })
    const socket: Socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST /v1/responses HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\n` +
          `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      )
      socket.pause() // and never read
    })
    socket.on("error", () => {})
    try {
      await waitFor(() => logged.some((e) => e.status === 499), 5_000)
      expect(logged.find((e) => e.status === 499)).toMatchObject({ code: "client_write_timeout", path: "/v1/responses" })
      expect(upstreamClosed).toBe(true)
    } finally {
      socket.destroy()
    }
    // The one slot is free again: the next request is served, not refused.
    const next = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "hi" })
    expect(next.status).toBe(200)
  })
})
