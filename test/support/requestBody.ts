/** What the test upstreams read of a request: its body as text, and that text as JSON when it is. */
import type { IncomingMessage } from "node:http"

export const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** The body as JSON; the text itself when it is not JSON; undefined when empty. */
export const parseBody = (raw: string): unknown => {
  if (raw.length === 0) return undefined
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}
