/**
 * Tracing, opt-in. With it on, each request is one server span, from its first byte until its
 * scope closes (the answer streamed, the settlement done), carrying what the request came to
 * (route, status, group, model, account, tokens, cost: observability/requestFacts.ts), with child
 * spans for the policy checks, scheduling, each upstream attempt and the settlement; the upstream
 * attempt's span goes upstream as W3C `traceparent`. A client's own `traceparent` is the parent.
 * What a model turn came to is named as OpenTelemetry's GenAI semantic conventions name it
 * (`gen_ai.*`, `genAiAttributes`); the rest is `modelgate.*`.
 *
 * With it off (the default) the request path makes no span at all: the app never creates the root
 * span, and `traced` hands back the effect unwrapped when the request has none.
 *
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) turns it on in `npm start`
 * and exports through effect/observability's OTLP/HTTP (JSON) tracer (no @effect/opentelemetry);
 * an embedder may instead set `ListenOptions.tracing` and provide any Tracer.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Context, Effect, Exit, Layer, Option, type Tracer } from "effect"
import * as HttpTraceContext from "effect/http/HttpTraceContext"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as OtlpSerialization from "effect/observability/OtlpSerialization"
import * as OtlpTracer from "effect/observability/OtlpTracer"
import { type Account, upstreamModel } from "../domain/model.js"
import type { RequestFacts } from "./requestFacts.js"

/** The W3C `traceparent` naming `span` as the parent: `00-<trace id>-<span id>-<flags>`. */
export const traceparentOf = (span: Tracer.Span): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * `effect` as a child span of the request's span, when the request has one (tracing on); the
 * effect itself otherwise. `parent` (the request's span: `currentRequestSpan`) makes the link
 * explicit where the fiber's context has lost it (a finalizer after the answer).
 */
export const traced = <A, E, R>(
  parent: Tracer.Span | undefined,
  name: string,
  effect: Effect.Effect<A, E, R>,
  attributes?: Record<string, unknown>
): Effect.Effect<A, E, R> =>
  parent === undefined
    ? effect
    : Effect.withSpan(effect, name, { parent, ...(attributes === undefined ? {} : { attributes }) })

/**
 * The span of the request this fiber serves (the app's, or a WebSocket turn's), when tracing is on;
 * undefined: make no spans. Provided from above, like the request id.
 */
export const currentRequestSpan: Context.Reference<Tracer.Span | undefined> = Context.Reference<Tracer.Span | undefined>(
  "modelgate/RequestSpan",
  { defaultValue: () => undefined }
)

/** GenAI semantic conventions: what a model turn (Responses, Messages) is, for samplers too. */
export const CHAT_OPERATION = { "gen_ai.operation.name": "chat" } as const

/**
 * The request's server span, its parent the client's `traceparent` (or b3) when it sent one;
 * `turn`: the request is a model turn (`gen_ai.operation.name`).
 */
export const startRequestSpan = (request: HttpServerRequest.HttpServerRequest, path: string, route: string, turn = false) =>
  Effect.makeSpan(`${request.method} ${route}`, {
    kind: "server",
    parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)),
    attributes: { "http.request.method": request.method, "url.path": path, "http.route": route, ...(turn ? CHAT_OPERATION : {}) }
  })

/**
 * An upstream attempt's span (a client span, in the GenAI conventions' terms): the account, its
 * platform, the model asked of it, and the host and port it is called at.
 */
export const attemptAttributes = (account: Account, requestedModel: string): Record<string, unknown> => {
  const attributes: Record<string, unknown> = {
    "modelgate.account": account.name,
    "gen_ai.provider.name": account.platform,
    "gen_ai.request.model": upstreamModel(account, requestedModel)
  }
  if (!URL.canParse(account.baseUrl)) return attributes
  const url = new URL(account.baseUrl)
  attributes["server.address"] = url.hostname.replace(/^\[(.*)\]$/, "$1")
  attributes["server.port"] = url.port !== "" ? Number(url.port) : url.protocol === "http:" ? 80 : 443
  return attributes
}

/**
 * The GenAI semantic conventions' attributes of what a turn came to (the operation name is set at
 * the span's start): the provider, the requested model, what the upstream said of its answer, and
 * the tokens settled (input with cache reads and writes included, as the conventions count them).
 */
const genAiAttributes = (span: Tracer.Span, facts: RequestFacts) => {
  if (facts.platform !== undefined) span.attribute("gen_ai.provider.name", facts.platform)
  if (facts.model !== undefined) span.attribute("gen_ai.request.model", facts.model)
  const answer = facts.answer
  if (answer !== undefined) {
    if (answer.id !== undefined) span.attribute("gen_ai.response.id", answer.id)
    if (answer.model !== undefined) span.attribute("gen_ai.response.model", answer.model)
    if (answer.finishReason !== undefined) span.attribute("gen_ai.response.finish_reasons", [answer.finishReason])
  }
  if (facts.inputTokens !== undefined) span.attribute("gen_ai.usage.input_tokens", facts.inputTokens)
  if (facts.outputTokens !== undefined) span.attribute("gen_ai.usage.output_tokens", facts.outputTokens)
  if (facts.cacheReadTokens !== undefined) span.attribute("gen_ai.usage.cache_read.input_tokens", facts.cacheReadTokens)
  if (facts.cacheCreationTokens !== undefined) span.attribute("gen_ai.usage.cache_creation.input_tokens", facts.cacheCreationTokens)
}

/** Ends the request's span with what it came to. */
export const endRequestSpan = (
  span: Tracer.Span,
  facts: RequestFacts | undefined,
  status: number,
  code: string,
  endNanos: bigint
) => {
  span.attribute("http.response.status_code", status)
  span.attribute("modelgate.code", code)
  if (facts === undefined) return span.end(endNanos, status >= 500 ? Exit.fail(code) : Exit.void)
  span.attribute("modelgate.key", facts.keyId)
  span.attribute("modelgate.group", facts.group)
  genAiAttributes(span, facts)
  if (facts.account !== undefined) span.attribute("modelgate.account", facts.account)
  if (facts.upstreamStatus !== undefined) span.attribute("modelgate.upstream.status_code", facts.upstreamStatus)
  if (facts.attempts !== undefined) span.attribute("modelgate.upstream.attempts", facts.attempts)
  if (facts.costMicros !== undefined) span.attribute("modelgate.cost_usd", facts.costMicros / 1_000_000)
  span.end(endNanos, status >= 500 ? Exit.fail(code) : Exit.void)
}

export interface OtlpOptions {
  /** Where spans are POSTed (the traces URL itself, `…/v1/traces`). */
  readonly url: string
  readonly serviceName: string
  readonly headers?: Readonly<Record<string, string>>
  /** How often batches are sent (default 5 s; tests use less). */
  readonly exportIntervalMillis?: number
}

/** Spans exported over OTLP/HTTP with JSON bodies; what is pending is sent when the layer closes. */
export const layerOtlp = (options: OtlpOptions): Layer.Layer<never> =>
  OtlpTracer.layer({
    url: options.url,
    resource: { serviceName: options.serviceName },
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    ...(options.exportIntervalMillis === undefined ? {} : { exportInterval: options.exportIntervalMillis })
  }).pipe(Layer.provide(Layer.merge(NodeHttpClient.layerUndici, OtlpSerialization.layerJson)))

/** `k1=v1,k2=v2`, as OTEL_EXPORTER_OTLP_HEADERS writes them (values URL-encoded). */
export const parseOtlpHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    headers[pair.slice(0, at).trim().toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return headers
}

/**
 * The OTLP options the environment asks for, if any: the standard variables
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`),
 * `OTEL_SERVICE_NAME` (default `modelgate`), `OTEL_EXPORTER_OTLP_HEADERS`.
 */
export const otlpFromEnv: Effect.Effect<Option.Option<OtlpOptions>, Config.ConfigError> = Effect.map(
  Config.all({
    traces: Config.option(Config.NonEmptyString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
    base: Config.option(Config.NonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT")),
    serviceName: Config.NonEmptyString("OTEL_SERVICE_NAME").pipe(Config.withDefault("modelgate")),
    headers: Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault(""))
  }),
  ({ base, headers, serviceName, traces }) => {
    const url = Option.orElse(traces, () => Option.map(base, (b) => `${b.replace(/\/+$/, "")}/v1/traces`))
    return Option.map(url, (url): OtlpOptions => ({ url, serviceName, headers: parseOtlpHeaders(headers) }))
  }
)

/** The OTLP exporter when the environment names an endpoint; nothing otherwise. */
export const layerFromEnv: Layer.Layer<never, Config.ConfigError> = Layer.unwrap(
  Effect.map(otlpFromEnv, Option.match({ onNone: () => Layer.empty, onSome: layerOtlp }))
)
