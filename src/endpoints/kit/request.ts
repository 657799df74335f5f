/**
 * What every endpoint reads about its request besides the platform's HttpServerRequest: our request
 * id (on every response as `x-request-id`, on the request's log lines, the settlement's key).
 *
 * The id is a Context.Reference that the gateway app sets when a request starts (src/server/app.ts),
 * with a default outside a request (an empty id: `requestId` then makes a fresh one).
 */
import { Context, Effect } from "effect"
import { newRequestId } from "../../domain/ids.js"

/** Lower-case header names, as the platform gives them. */
export type Headers = Readonly<Record<string, string | undefined>>

export const currentRequestId: Context.Reference<string> = Context.Reference<string>("modelgate/RequestId", {
  defaultValue: () => ""
})

/** The request id of the request this fiber serves (a fresh one outside the gateway app, e.g. in a unit test). */
export const requestId: Effect.Effect<string> = currentRequestId.useSync((id) => id === "" ? newRequestId() : id)

/** The path of a request URL, without its query. */
export const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q < 0 ? url : url.slice(0, q)
}
