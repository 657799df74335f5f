/**
 * MAX_CONNECTIONS on the platform's server (the node:http server of src/server/connections.ts): past
 * the cap a new connection is closed at once, unanswered; the connections within it are served, and
 * once one closes there is room again.
 */
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { waitFor } from "../http/helpers.js"

const config = {
  groups: [{ name: "oa", platform: "openai", models: ["gpt-5.4"] }],
  users: [{ name: "alice", balance_usd: 100 }],
  keys: [{ key: "sk-connection-cap-0001", user: "alice", group: "oa" }],
  accounts: [{ name: "sim", platform: "openai", kind: "simulator", groups: ["oa"] }]
}

interface Client {
  readonly socket: Socket
  readonly received: () => string
  readonly closed: () => boolean
}

const open = (url: string): Promise<Client> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    let text = ""
    let closed = false
    const socket = connect(Number(port), hostname, () => resolve({ socket, received: () => text, closed: () => closed }))
    socket.on("data", (chunk: Buffer) => void (text += chunk.toString("utf8")))
    socket.on("close", () => void (closed = true))
    socket.on("error", (e) => (closed ? undefined : reject(e)))
  })

const health = "GET /health HTTP/1.1\r\nhost: x\r\n\r\n"

describe("the connection cap", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config, settings: { maxConnections: 2 } })
  })
  afterAll(() => gw.close())

  it("closes a connection past MAX_CONNECTIONS unanswered, and serves one again once there is room", async () => {
    const first = await open(gw.url)
    const second = await open(gw.url)
    first.socket.write(health)
    second.socket.write(health)
    await waitFor(() => first.received().includes("\r\n\r\n") && second.received().includes("\r\n\r\n"))
    expect(first.received()).toMatch(/^HTTP\/1\.1 200/)
    expect(second.received()).toMatch(/^HTTP\/1\.1 200/)

    const third = await open(gw.url)
    third.socket.write(health)
    await waitFor(() => third.closed())
    expect(third.received()).toBe("")

    first.socket.destroy()
    await waitFor(() => first.closed())
    // The server counts the closed connection out on its next turn.
    await new Promise((resolve) => setTimeout(resolve, 50))
    const fourth = await open(gw.url)
    fourth.socket.write(health)
    await waitFor(() => fourth.received().includes("\r\n\r\n"))
    expect(fourth.received()).toMatch(/^HTTP\/1\.1 200/)
    second.socket.destroy()
    fourth.socket.destroy()
  })
})
