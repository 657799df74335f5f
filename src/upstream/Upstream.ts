/**
 * Upstream calls one provider account over its own wire format. It does not interpret answers:
 * any HTTP status comes back as a value (the caller decides on failover); only transport failures
 * are errors. The answer body is a pull-based Stream tied to the caller's Scope, so closing the
 * scope (client gone, shutdown) aborts the upstream request.
 */
import type { Readable } from "node:stream"
import { Context, Effect, Layer, type Scope, Stream } from "effect"
import { Settings } from "../config/AppConfig.js"
import type { UpstreamFailed } from "../domain/errors.js"
import type { Account } from "../domain/model.js"
import { makeHttpUpstream } from "./http.js"
import { simulatorUpstream } from "./simulatorUpstream.js"

export interface UpstreamRequest {
  /** Appended to the account's base_url: `/responses[/sub]` for OpenAI, `/v1/messages` for Anthropic. */
  readonly path: string
  /** The JSON body, already serialised (passthrough forwards the client's bytes when it can). */
  readonly body: string
  readonly stream: boolean
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
  /**
   * The whole body as text in one step, when the implementation can do that cheaper than through
   * the Stream (a JSON answer is small and read at once). Use `readText`, which falls back.
   */
  readonly text?: Effect.Effect<string, UpstreamFailed>
  /**
   * The body as the Node stream it is, when it is one (the HTTP upstream): the SSE pump reads it
   * with plain listeners, which costs a tenth of a Stream per chunk. `failure` maps its errors.
   */
  readonly readable?: {
    readonly stream: Readable
    readonly failure: (cause: unknown) => UpstreamFailed
  }
}

/** The whole answer as text: the implementation's fast path if it has one, else the byte Stream. */
export const readText = (response: UpstreamResponse): Effect.Effect<string, UpstreamFailed> =>
  response.text ?? response.body.pipe(Stream.decodeText(), Stream.runFold("", (acc, s) => acc + s))

export interface UpstreamShape {
  readonly send: (account: Account, request: UpstreamRequest) => Effect.Effect<UpstreamResponse, UpstreamFailed, Scope.Scope>
}

export class Upstream extends Context.Tag("modelgate/Upstream")<Upstream, UpstreamShape>() {
  /** HTTP (undici keep-alive pool) for `kind: http` accounts, the simulator for `kind: simulator`. */
  static readonly layer = Layer.scoped(
    Upstream,
    Effect.gen(function*() {
      const settings = yield* Settings
      const http = yield* makeHttpUpstream(settings)
      return {
        send: (account, request) =>
          account.kind === "simulator" ? simulatorUpstream.send(account, request) : http.send(account, request)
      }
    })
  )
  static readonly layerTest = (send: UpstreamShape["send"]) => Layer.succeed(Upstream, { send })
}
