/**
 * The floor: a minimal keep-alive reverse proxy on bare `node:http`, forwarding every request to
 * UPSTREAM (the bench fake) and streaming the answer back. No parsing, no auth, no logging: what
 * any Node gateway costs at least. Prints `{"url": ...}` when listening; exits when stdin closes.
 */
import { Agent, createServer, request } from "node:http"
import { exitWithParent } from "./shared.js"

const upstream = new URL(process.env["UPSTREAM"] ?? "http://127.0.0.1:8081")
// MAX_SOCKETS (default 256): the long-lived streams scenario may hold more requests open than that.
const agent = new Agent({ keepAlive: true, maxSockets: Number(process.env["MAX_SOCKETS"] ?? "256"), keepAliveMsecs: 60_000 })
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host"])
const strip = (h: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !HOP.has(k)))

const server = createServer({ keepAlive: true, keepAliveTimeout: 60_000 }, (req, res) => {
  const up = request(
    { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: strip(req.headers), agent },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, strip(upRes.headers))
      upRes.pipe(res)
    }
  )
  up.on("error", () => {
    if (!res.headersSent) res.writeHead(502)
    res.end()
  })
  req.pipe(up)
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env["PORT"] ?? "0"), "127.0.0.1", () => {
  const a = server.address()
  if (a !== null && typeof a !== "string") process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${a.port}` })}\n`)
})
exitWithParent()
process.on("SIGTERM", () => process.exit(0))
