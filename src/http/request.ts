/**
 * The request as handlers see it: what they read from it, parsed once. Handlers get it as an
 * argument rather than from the Context, because providing a service per request copies the
 * fiber's context on every request.
 */
import type { Readable } from "node:stream"

/** Lower-case header names. Only `set-cookie` can repeat in Node, and the gateway never reads it. */
export type Headers = Readonly<Record<string, string | undefined>>

export interface ClientRequest {
  /** Ours, on every response as `x-request-id` and on the request's log lines. */
  readonly id: string
  readonly method: string
  /** The path and query as sent. */
  readonly url: string
  /** The path without the query. */
  readonly path: string
  readonly headers: Headers
  /** The body, not yet read. */
  readonly body: Readable
}
