/**
 * Upstream calls one provider account over its own wire format. It does not interpret answers:
 * any HTTP status comes back as a value (the caller decides on failover); only transport failures
 * are errors. The answer body is a pull-based Stream tied to the caller's Scope, so closing the
 * scope (client gone, shutdown) aborts the upstream request.
 */
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

/** Receives a body chunk by chunk, then exactly one of `end` or `error`. */
export interface BodyListener {
  readonly data: (chunk: Uint8Array) => void
  readonly end: () => void
  readonly error: (failure: UpstreamFailed) => void
}

/**
 * A body pushed to one listener, for the SSE pump: plain callbacks cost a tenth of a Stream per
 * chunk. What arrived before `listen` is delivered first. `pause` holds the upstream while the
 * client cannot take more; `unlisten` stops delivery (releasing the request is the scope's job).
 */
export interface BodySource {
  readonly listen: (listener: BodyListener) => void
  readonly unlisten: () => void
  readonly pause: () => void
  readonly resume: () => void
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** When the headers came (epoch ms), if the answer was handed over later (a JSON answer comes whole). */
  readonly headersAt?: number
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
  /**
   * The whole body as text in one step, when the implementation can do that cheaper than through
   * the Stream (a JSON answer is small and read at once). Use `readText`, which falls back.
   */
  readonly text?: Effect.Effect<string, UpstreamFailed>
  /** The body as a push source, when the implementation has one (the HTTP upstream). */
  readonly source?: BodySource
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
