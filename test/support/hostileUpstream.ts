/**
 * A `node:http` upstream that answers whatever a test scripts from the request it got, headers
 * included: the hostile pages of issue 32 (the account's credential echoed in a 200 page, in SSE
 * comments, in frames the gateway does not know) and bodies written in many reads (one event of
 * megabytes). It speaks no platform: the script writes every byte. Every request is recorded.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { listenLocal } from "./localServer.js"
import { parseBody, readBody } from "./requestBody.js"

export interface HostileRequest {
  readonly path: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: unknown
}

export type HostileAnswer =
  /** One body, written whole. */
  | { readonly _tag: "Page"; readonly status: number; readonly contentType: string; readonly body: string }
  /**
   * A 200 whose chunks are written one by one, each once the last was flushed (so as separate
   * reads, as far as TCP keeps them apart); `before`, when given, is awaited before chunk `at`.
   */
  | {
    readonly _tag: "Chunks"
    readonly contentType: string
    readonly chunks: ReadonlyArray<string>
    readonly before?: { readonly at: number; readonly wait: Promise<void> }
  }

export type HostileScript = (request: HostileRequest, index: number) => HostileAnswer

export interface HostileUpstream {
  readonly url: string
  readonly requests: ReadonlyArray<HostileRequest>
  readonly setScript: (script: HostileScript) => void
  /** The body bytes written so far, all requests together. */
  readonly writtenBytes: () => number
  readonly close: () => Promise<void>
}

const flatHeaders = (req: IncomingMessage): Record<string, string | undefined> => {
  const out: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(req.headers)) out[name] = Array.isArray(value) ? value.join(", ") : value
  return out
}

export const startHostileUpstream = async (): Promise<HostileUpstream> => {
  const requests: Array<HostileRequest> = []
  let script: HostileScript = () => ({ _tag: "Page", status: 500, contentType: "text/plain", body: "no script" })
  let written = 0

  const write = (res: ServerResponse, chunk: string): Promise<boolean> =>
    new Promise((resolve) => {
      if (res.destroyed) return resolve(false)
      res.write(chunk, (error) => {
        if (error == null) written += Buffer.byteLength(chunk)
        resolve(error == null && !res.destroyed)
      })
    })

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req)
    const request: HostileRequest = { path: (req.url ?? "/").split("?")[0] ?? "/", headers: flatHeaders(req), body: parseBody(raw) }
    requests.push(request)
    const answer = script(request, requests.length - 1)
    if (answer._tag === "Page") {
      res.writeHead(answer.status, { "content-type": answer.contentType, "content-length": String(Buffer.byteLength(answer.body)) })
      res.end(answer.body)
      written += Buffer.byteLength(answer.body)
      return
    }
    res.writeHead(200, { "content-type": answer.contentType, "cache-control": "no-cache" })
    res.flushHeaders()
    for (const [at, chunk] of answer.chunks.entries()) {
      if (answer.before?.at === at) await answer.before.wait
      if (!(await write(res, chunk))) return
    }
    res.end()
  }

  const server = await listenLocal((req, res) => {
    handle(req, res).catch(() => res.destroy())
  }, "hostile upstream", { keepAlive: true })
  return {
    url: server.url,
    requests,
    setScript: (s) => {
      script = s
    },
    writtenBytes: () => written,
    close: server.close
  }
}
