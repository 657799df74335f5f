/**
 * Your own Upstream layer: here, one on effect/http's HttpClient instead of the gateway's own
 * undici client. An Upstream answers a request for an account with the status, the headers and the
 * body as a Stream of bytes; it does not interpret the answer (an error status is a value, the
 * gateway decides on failover), and only transport failures are errors.
 * README "Write your own Upstream layer"; test/compose.test.ts runs it against a fake upstream.
 */
import { Effect, Layer, Redacted, Stream } from "effect"
import { HttpBody, HttpClient, type HttpClientError } from "effect/http"
import { Upstream, UpstreamFailed } from "../src/index.js" // "modelgate" in your project

const failed = (account: string) => (e: HttpClientError.HttpClientError) =>
  new UpstreamFailed({ status: 0, code: "upstream_unreachable", message: `Upstream account '${account}': ${e._tag}` })

export const HttpClientUpstream = Layer.effect(Upstream)(
  // withScope: closing the request's Scope (the client left, the gateway is done) aborts the call.
  Effect.map(Effect.map(Effect.service(HttpClient.HttpClient), HttpClient.withScope), (client) =>
    Upstream.of({
      send: (account, request) => {
        const secret = account.secret === undefined ? "" : Redacted.value(account.secret)
        const headers = account.platform === "anthropic"
          ? { "x-api-key": secret, "anthropic-version": "2023-06-01" }
          : { authorization: `Bearer ${secret}` }
        return client.post(`${account.baseUrl.replace(/\/+$/, "")}${request.path}`, {
          headers: { ...request.headers, ...headers }, // the client's forwarded headers, under the account's
          body: HttpBody.text(request.body, "application/json")
        }).pipe(
          Effect.map((response) => ({
            status: response.status,
            headers: response.headers,
            body: Stream.mapError(response.stream, failed(account.name))
          })),
          Effect.mapError(failed(account.name))
        )
      }
    }))
)
