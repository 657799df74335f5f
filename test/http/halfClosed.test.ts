/**
 * A client the HTTP parser refused cannot keep its connection (issue 26, item 4): once the 400 is
 * answered the server closes the connection fully, so a client that never closes its own side holds
 * neither a connection slot nor a file descriptor, and MAX_CONNECTIONS such clients do not lock
 * anyone out.
 */
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { defaultSettings } from "../../src/config/AppConfig.js"
import { makeNodeServer } from "../../src/server/connections.js"
import { startGateway, type TestGateway } from "../support/gateway.js"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: "sk-halfclosed-0001", user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

const MAX_CONNECTIONS = 3

/** How long a test waits for something that should happen well within it. */
const PATIENCE_MS = 10_000

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * A client that sends a request the parser refuses, reads the answer and never closes its side
 * (allowHalfOpen: node would otherwise answer the server's FIN with its own).
 */
const silentClient = (url: string) =>
  new Promise<{ readonly socket: Socket; readonly answer: string }>((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true }, () => socket.write("GARBAGE / NOT-HTTP\r\n\r\n"))
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk: Buffer) => chunks.push(chunk))
    socket.once("end", () => resolve({ socket, answer: Buffer.concat(chunks).toString("utf8") }))
    socket.on("error", () => undefined)
    socket.once("close", () => reject(new Error("closed before the answer ended")))
  })

/** Polls `check` until it holds, or `PATIENCE_MS`. */
const eventually = async (check: () => Promise<boolean>): Promise<boolean> => {
  const deadline = Date.now() + PATIENCE_MS
  while (Date.now() < deadline) {
    if (await check()) return true
    await sleep(50)
  }
  return false
}

/** A GET /health on a fresh connection: its status, or undefined when the server dropped the connection. */
const health = (url: string) =>
  new Promise<number | undefined>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () => socket.write("GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"))
    let text = ""
    socket.on("data", (chunk: Buffer) => void (text += chunk.toString("utf8")))
    socket.on("error", () => undefined)
    socket.on("close", () => {
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1]
      resolve(status === undefined ? undefined : Number(status))
    })
  })

describe("clients the parser refused", () => {
  let gw: TestGateway
  const clients: Array<Socket> = []
  beforeAll(async () => {
    gw = await startGateway({ config, settings: { maxConnections: MAX_CONNECTIONS } })
  })
  afterAll(async () => {
    for (const socket of clients) socket.destroy()
    await gw.close()
  })

  it("a client that never closes after its 400 is disconnected by the server", async () => {
    // The gateway's node:http server on its own, to count the connections it holds.
    const server = makeNodeServer(defaultSettings)
    server.on("request", (_req, res) => res.end())
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    const url = typeof address === "object" && address !== null ? `http://127.0.0.1:${address.port}` : ""
    const connections = () => new Promise<number>((resolve) => server.getConnections((_e, count) => resolve(count)))
    try {
      const { socket, answer } = await silentClient(url)
      clients.push(socket)
      expect(answer).toMatch(/^HTTP\/1\.1 400 /)
      expect(answer).toContain(`"code":"bad_request"`)
      expect(socket.destroyed).toBe(false) // the client holds its side open
      expect(await eventually(async () => (await connections()) === 0)).toBe(true)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it(`${MAX_CONNECTIONS} such clients do not lock out a new one`, async () => {
    const silent = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => silentClient(gw.url)))
    for (const { socket, answer } of silent) {
      clients.push(socket)
      expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    }
    // Served once the server has let the silent ones go (a new client is dropped while they hold every slot).
    let status: number | undefined
    await eventually(async () => (status = await health(gw.url)) !== undefined)
    expect(status).toBe(200)
  })
})
