/**
 * Connection abuse gets firm limits (issue 16, item 10): a request the HTTP parser refuses is
 * answered in the envelope with an x-request-id (400 not HTTP, 431 headers too large); a client
 * that sends its headers or its body too slowly is cut at the configured timeouts.
 */
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: "sk-connections-0001", user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

/** Writes `parts` with `gapMs` between them and collects what comes back until the server closes. */
const exchange = (url: string, parts: ReadonlyArray<string>, gapMs = 0) =>
  new Promise<{ readonly text: string; readonly closedAfterMs: number }>((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const started = Date.now()
    const chunks: Array<Buffer> = []
    const socket = connect(Number(port), hostname, () => {
      const queue = [...parts]
      const next = () => {
        const part = queue.shift()
        if (part === undefined || socket.destroyed) return
        socket.write(part)
        setTimeout(next, gapMs)
      }
      next()
    })
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.on("close", () => resolve({ text: Buffer.concat(chunks).toString("utf8"), closedAfterMs: Date.now() - started }))
    socket.on("error", (e) => (chunks.length > 0 ? undefined : reject(e)))
  })

describe("connection limits", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, settings: { headerTimeoutMillis: 400, bodyTimeoutMillis: 800 } })
  })
  afterAll(() => gw.close())

  it("a request that is not HTTP is a 400 envelope with an x-request-id", async () => {
    const { text } = await exchange(gw.url, ["GARBAGE / NOT-HTTP\r\n\r\n"])
    expect(text).toMatch(/^HTTP\/1\.1 400 /)
    expect(text).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/)
    expect(text).toContain(`"code":"bad_request"`)
  })

  it("headers too large are a 431 envelope", async () => {
    const { text } = await exchange(gw.url, [`GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(40_000)}\r\n\r\n`])
    expect(text).toMatch(/^HTTP\/1\.1 431 /)
    expect(text).toContain(`"code":"headers_too_large"`)
  })

  it("a client that never finishes its headers is cut at the header timeout", async () => {
    const { closedAfterMs } = await exchange(gw.url, ["GET /health HTTP/1.1\r\n", "host: x\r\n", "x-slow: 1\r\n", "x-slow: 2\r\n"], 300)
    expect(closedAfterMs).toBeGreaterThanOrEqual(350)
    expect(closedAfterMs).toBeLessThan(3_000)
  })

  it("a client that sends its body too slowly is cut at the body timeout", async () => {
    const head = "POST /v1/responses HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-connections-0001\r\n" +
      "content-type: application/json\r\ncontent-length: 100\r\n\r\n"
    const { closedAfterMs } = await exchange(gw.url, [head, `{"model":`, `"gpt-5.4",`, `"input":`, `"hi"`, " ", " ", " ", " "], 250)
    expect(closedAfterMs).toBeGreaterThanOrEqual(700)
    expect(closedAfterMs).toBeLessThan(4_000)
  })
})
