/**
 * A `node:http` server on 127.0.0.1 for the test fakes: it listens on a free port (or the one
 * given), remembers its open sockets and destroys them on `close`, so a fake with a lingering
 * keep-alive or a held stream still closes at once. Each fake passes its own handler, with its
 * own answer to a handler that throws.
 */
import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http"
import type { Socket } from "node:net"

export interface LocalServer {
  readonly url: string
  readonly port: number
  /** For the fakes that tune the server or watch its connections further. */
  readonly server: Server
  /** Stops listening and destroys every open socket. */
  readonly close: () => Promise<void>
}

export interface LocalServerOptions {
  /** TCP keep-alive on accepted sockets (node's `createServer({ keepAlive })`). */
  readonly keepAlive?: boolean
  /** 0 (a free port) unless given. */
  readonly port?: number | undefined
}

/** `label` names the fake in the error thrown when the server has no TCP address. */
export const listenLocal = async (handler: RequestListener, label: string, options: LocalServerOptions = {}): Promise<LocalServer> => {
  const sockets = new Set<Socket>()
  const server = createServer({ keepAlive: options.keepAlive ?? false }, handler)
  server.on("connection", (socket: Socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject)
      resolve()
    })
  })
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error(`${label}: no TCP address`)
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)))
        for (const socket of sockets) socket.destroy()
      })
  }
}

/** A handler's failure as an Anthropic-shaped 500 `api_error`, or a cut once the answer has begun. */
export const answerApiError = (res: ServerResponse, error: unknown): void => {
  if (res.headersSent) return void res.destroy()
  res.writeHead(500, { "content-type": "application/json" })
  res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: String(error) } }))
}
