/**
 * A TCP proxy in front of a server (PostgreSQL in the store tests) that can be told to stall:
 * while stalled it still accepts connections and takes whatever the client writes, but forwards
 * nothing either way, as a database host that hangs or a network that drops packets would look
 * from the gateway. Un-stalling resumes forwarding; bytes held back are then discarded (the
 * connections they belonged to are cut), so the client has to recover on fresh connections, as
 * after a real outage.
 */
import { connect, createServer, type Socket } from "node:net"

export interface StallProxy {
  /** 127.0.0.1 port the proxy listens on. */
  readonly port: number
  /** From now on: accept, forward nothing. Connections open at this moment stop answering too. */
  readonly stall: () => void
  /** Forward again; connections that saw the stall are cut (their protocol state is lost). */
  readonly resume: () => void
  /** Connections accepted so far (a client that stops opening them would show here). */
  readonly accepted: () => number
  readonly close: () => Promise<void>
}

interface Pair {
  readonly client: Socket
  readonly server: Socket
  /** Saw a stall: never forwards again. */
  stalled: boolean
}

export const startStallProxy = async (target: { readonly host: string; readonly port: number }): Promise<StallProxy> => {
  const pairs = new Set<Pair>()
  let stalled = false
  let accepted = 0

  const server = createServer((client) => {
    accepted++
    const upstream = connect({ host: target.host, port: target.port })
    const pair: Pair = { client, server: upstream, stalled }
    pairs.add(pair)
    const drop = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    // Bytes are read (so the client's writes succeed) and dropped while the pair is stalled.
    client.on("data", (chunk) => {
      if (!pair.stalled) upstream.write(chunk)
    })
    upstream.on("data", (chunk) => {
      if (!pair.stalled) client.write(chunk)
    })
    // A stalled pair hides the server's side ending too: the client must find out by itself.
    upstream.on("close", () => {
      if (!pair.stalled) drop()
    })
    upstream.on("error", () => undefined)
    client.on("close", drop)
    client.on("error", () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the stall proxy has no TCP address")

  return {
    port: address.port,
    stall: () => {
      stalled = true
      for (const pair of pairs) pair.stalled = true
    },
    resume: () => {
      stalled = false
      for (const pair of [...pairs]) {
        if (!pair.stalled) continue
        pairs.delete(pair)
        pair.client.destroy()
        pair.server.destroy()
      }
    },
    accepted: () => accepted,
    close: async () => {
      for (const pair of pairs) {
        pair.client.destroy()
        pair.server.destroy()
      }
      pairs.clear()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
