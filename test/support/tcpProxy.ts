/**
 * A TCP proxy to host:port on a free local port, to take a database away from a gateway and give it
 * back: `hang` stops forwarding (connections stay open, new ones are accepted, nothing comes back),
 * `close` cuts every connection and stops listening (new connections are refused, which a client
 * sees at once), `reopen` listens again on the same port, forwarding.
 */
import { connect, createServer, type Server, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly hang: () => void
  readonly close: () => Promise<void>
  readonly reopen: () => Promise<void>
}

export const tcpProxy = async (host: string, port: number): Promise<TcpProxy> => {
  let hanging = false
  const sockets = new Set<Socket>()
  const pairs = new Set<readonly [Socket, Socket]>()
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
        if (hanging) return
        const upstream = connect(port, host)
        track(upstream)
        const pair = [client, upstream] as const
        pairs.add(pair)
        client.pipe(upstream)
        upstream.pipe(client)
        const end = () => {
          pairs.delete(pair)
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
    hang: () => {
      hanging = true
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        // Read and drop, so nothing reaches either side.
        client.removeAllListeners("data")
        upstream.removeAllListeners("data")
        client.on("data", () => undefined)
        upstream.on("data", () => undefined)
      }
    },
    close: async () => {
      const s = server
      server = undefined
      for (const socket of sockets) socket.destroy()
      if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()))
    },
    reopen: async () => {
      hanging = false
      await listen(ownPort)
    }
  }
}
