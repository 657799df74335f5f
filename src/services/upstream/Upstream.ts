/**
 * Upstream calls one provider account over its own wire format. It does not interpret answers:
 * any HTTP status comes back as a value (the caller decides on failover); only transport failures
 * are errors. The answer is a status, headers and one body: a pull-based Stream of the bytes as
 * they come, tied to the caller's Scope, so closing the scope (client gone, shutdown) aborts the
 * upstream request. The contract is only this: how an implementation gets there is its own.
 */
import { Cause, Context, Effect, Layer, type Scope, Stream } from "effect"
import type { UpstreamFailed } from "../../domain/errors.js"
import type { Account } from "../../domain/model.js"

export interface UpstreamRequest {
  /** Appended to the account's base_url: `/responses[/sub]` for OpenAI, `/v1/messages` for Anthropic. */
  readonly path: string
  /** The JSON body, already serialised (passthrough forwards the client's bytes when it can). */
  readonly body: string
  readonly stream: boolean
  /**
   * The client's headers that go along (already filtered by src/domain/forwardHeaders.ts), or none.
   * The account's own headers (credentials, content type, versions) win over any of these.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
}

export interface UpstreamResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  /** The body, one element per read from the upstream (a pull may carry several). */
  readonly body: Stream.Stream<Uint8Array, UpstreamFailed>
}

export interface UpstreamShape {
  readonly send: (account: Account, request: UpstreamRequest) => Effect.Effect<UpstreamResponse, UpstreamFailed, Scope.Scope>
}

export class Upstream extends Context.Service<Upstream, UpstreamShape>()("modelgate/Upstream") {
  /** An Upstream that answers with `send` (tests, your own upstream). */
  static readonly layerTest = (send: UpstreamShape["send"]) => Layer.succeed(Upstream, { send })
}

/** A body that is already whole (a JSON answer read to its end, a canned test answer): the Stream of its one element. */
export const wholeBody = (bytes: Uint8Array): Stream.Stream<Uint8Array, never> => Stream.succeed(bytes)

/**
 * The body as text (a JSON answer, an error body), decoded as one UTF-8 text; with `limitBytes`,
 * no more is read than that (the rest is left unread, and cut off with the request's Scope).
 */
export const readText = (response: UpstreamResponse, limitBytes = Infinity): Effect.Effect<string, UpstreamFailed> =>
  Effect.scoped(Effect.flatMap(Stream.toPull(response.body), (pull) => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    const next: Effect.Effect<string, UpstreamFailed> = Effect.matchEffect(pull, {
      onFailure: (e) => (Cause.isDone(e) ? Effect.succeed(utf8Of(chunks)) : Effect.fail(e)),
      onSuccess: (batch) => {
        for (const bytes of batch) {
          if (size >= limitBytes) break
          chunks.push(size + bytes.byteLength > limitBytes ? bytes.subarray(0, limitBytes - size) : bytes)
          size = Math.min(limitBytes, size + bytes.byteLength)
        }
        return size >= limitBytes ? Effect.succeed(utf8Of(chunks)) : next
      }
    })
    return next
  }))

/** Chunks as one UTF-8 text (decoded together, so a character split between chunks survives). */
export const utf8Of = (chunks: ReadonlyArray<Uint8Array>): string =>
  chunks.length === 1
    ? Buffer.from(chunks[0]!.buffer, chunks[0]!.byteOffset, chunks[0]!.byteLength).toString("utf8")
    : Buffer.concat(chunks).toString("utf8")
