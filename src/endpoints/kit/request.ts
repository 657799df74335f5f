/**
 * What every endpoint reads about its request besides the platform's HttpServerRequest: our request
 * id (on every response as `x-request-id`, on the request's log lines, the settlement's key).
 *
 * The id is a Context.Reference that the gateway app sets when a request starts (src/server/app.ts),
 * with a default outside a request (an empty id: `requestId` then makes a fresh one).
 */
import { Context, Effect, References, type Tracer } from "effect"
import { newRequestId } from "../../domain/ids.js"
import { currentRequestSpan } from "../../observability/tracing.js"

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

/**
 * The context a request's steps run in: its id, its span (tracing on), and the id on every log
 * line. Entries added to the fiber's context (overlays); Effect.provideContext would merge a
 * context into it instead, copying every service of the app on every request.
 */
export const requestContext = (id: string, span: Tracer.Span | undefined) => <R>(context: Context.Context<R>): Context.Context<R> => {
  const identified = Context.add(
    Context.add(context, currentRequestId, id),
    References.CurrentLogAnnotations,
    { ...Context.get(context, References.CurrentLogAnnotations), request_id: id }
  )
  return span === undefined ? identified : Context.add(identified, currentRequestSpan, span)
}
