/**
 * How a request's body is taken (src/endpoints/kit/body.ts): sent in pieces or large, it is served the same
 * and the access log's duration includes its upload; a client that leaves halfway through its
 * body is logged as a 499 without holding anything. The access log is captured through an
 * AccessLog layer of the test's own.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type AccessEntry, AccessLog } from "../../src/observability/accessLog.js"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { postResponses, rawRequest, waitFor } from "./helpers.js"

const KEY = "sk-body-read-0001"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: KEY, user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

describe("reading the request body", () => {
  let gw: TestGateway
  const logged: Array<AccessEntry> = []
  beforeAll(async () => {
    const accessLog = Layer.succeed(AccessLog, { record: (e) => Effect.sync(() => void logged.push(e)) })
    gw = await startGateway({ config, services: { accessLog }, settings: { maxBodyBytes: 2 * 1024 * 1024 } })
  })
  afterAll(() => gw.close())

  const bodyOf = (input: string) => JSON.stringify({ model: "gpt-5.4", input })

  it("a small body sent in pieces is served, and the log's duration includes its upload", async () => {
    const body = bodyOf("pieces")
    const third = Math.ceil(body.length / 3)
    const res = await rawRequest(gw.url, "/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "content-length": String(body.length) },
      chunks: [body.slice(0, third), body.slice(third, 2 * third), body.slice(2 * third)],
      gapMs: 150
    })
    expect(res.status).toBe(200)
    expect((JSON.parse(res.text) as { status?: unknown }).status).toBe("completed")
    const id = res.headers["x-request-id"]
    await waitFor(() => logged.some((e) => e.requestId === id))
    const entry = logged.find((e) => e.requestId === id)
    expect(entry).toMatchObject({ status: 200, code: "ok", method: "POST", path: "/v1/responses" })
    // Two gaps of 150 ms between the pieces: the upload alone takes 300 ms; half of it is a margin
    // for a busy machine starting the request's clock late.
    expect(entry?.durationMs).toBeGreaterThanOrEqual(150)
  })

  it("a 600 KB body is served the same", async () => {
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "x".repeat(600 * 1024) })
    expect(res.status).toBe(200)
    expect((res.json as { status?: unknown }).status).toBe("completed")
  })

  it("a client that leaves halfway through its body is logged as a 499, and the gateway goes on serving", async () => {
    const before = logged.length
    const { port } = new URL(gw.url)
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          "POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" +
            `authorization: Bearer ${KEY}\r\ncontent-length: 1000\r\n\r\n{"model":"gpt-5.4","input":"`
        )
        setTimeout(() => {
          socket.destroy()
          resolve()
        }, 50)
      })
      socket.on("error", reject)
    })
    await waitFor(() => logged.slice(before).some((e) => e.status === 499))
    expect(logged.slice(before).find((e) => e.status === 499)).toMatchObject({
      code: "client_closed_request",
      method: "POST",
      path: "/v1/responses"
    })
    const res = await postResponses(gw.url, KEY, { model: "gpt-5.4", input: "still here" })
    expect(res.status).toBe(200)
  })
})
