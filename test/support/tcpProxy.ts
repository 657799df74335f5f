/**
 * A TCP proxy to host:port on a free local port, to take a database away from a gateway and give
 * it back: `close` cuts every connection and stops listening (new connections are refused, which
 * a client sees at once), `reopen` listens again on the same port, forwarding.
 */
import { createServer, type Server, type Socket, connect } from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly close: () => Promise<void>
  readonly reopen: () => Promise<void>
}

export const tcpProxy = async (host: string, port: number): Promise<TcpProxy> => {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  const track = (s: Socket) => {
    sockets.add(s)
    s.on("error", () => undefined)
    s.on("close", () => sockets.delete(s))
  }
  const listen = (at: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer((client) => {
        track(client)
        const upstream = connect(port, host)
        track(upstream)
        client.pipe(upstream)
        upstream.pipe(client)
        const end = () => {
          client.destroy()
          upstream.destroy()
        }
        client.on("close", end)
        upstream.on("close", end)
      })
      s.once("error", reject)
      s.listen(at, "127.0.0.1", () => {
        server = s
        const address = s.address()
        resolve(typeof address === "object" && address !== null ? address.port : at)
      })
    })
  const ownPort = await listen(0)
  return {
    port: ownPort,
    close: async () => {
      const s = server
      server = undefined
      for (const socket of sockets) socket.destroy()
      if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()))
    },
    reopen: async () => {
      if (server === undefined) await listen(ownPort)
    }
  }
}
