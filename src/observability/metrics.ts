/**
 * The gateway's Effect metrics (requests, upstream timings, tokens, cost, moderation) and the
 * helpers that record them cheaply. GET /metrics renders every metric (src/endpoints/ops.ts).
 */
import { Metric, MetricBoundaries, MetricLabel } from "effect"

export const requestsTotal = Metric.counter("modelgate_requests_total", {
  description: "HTTP requests by route, status and error code",
  incremental: true
})

const latencyBuckets = MetricBoundaries.exponential({ start: 5, factor: 2, count: 14 })

export const upstreamLatency = Metric.histogram(
  "modelgate_upstream_latency_ms",
  latencyBuckets,
  "Upstream call duration until the answer is complete"
)

export const upstreamFirstByte = Metric.histogram(
  "modelgate_upstream_first_byte_ms",
  latencyBuckets,
  "Time from sending the upstream request to its response headers"
)

export const tokensTotal = Metric.counter("modelgate_tokens_total", { description: "Tokens settled", incremental: true })
export const costMicrosTotal = Metric.counter("modelgate_cost_micro_usd_total", {
  description: "Cost settled, micro-dollars",
  incremental: true
})

/**
 * `base` tagged with the given label values, each combination built once: tagging builds and hashes
 * a new metric key, and the combinations (routes, models, groups) are few.
 */
export const taggedCounters = (base: Metric.Metric.Counter<number>, names: ReadonlyArray<string>) => {
  const built = new Map<string, Metric.Metric.Counter<number>>()
  return (...values: ReadonlyArray<string>): Metric.Metric.Counter<number> => {
    const id = values.join("\u0000")
    let counter = built.get(id)
    if (counter === undefined) {
      counter = Metric.taggedWithLabels(base, names.map((name, i) => MetricLabel.make(name, values[i] ?? "")))
      built.set(id, counter)
    }
    return counter
  }
}

/**
 * Records a value now, from plain code. `Metric.update` first reads the fiber's metric labels
 * (`Effect.labelMetrics`), which this gateway never sets: its labels are fixed per metric
 * (taggedCounters). On the request path that read, times five metrics, is a measurable share of
 * a request's Effect operations.
 */
const NO_LABELS: ReadonlyArray<MetricLabel.MetricLabel> = []

export const observe = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>, value: In): void =>
  metric.unsafeUpdate(value, NO_LABELS)

const requestCounter = taggedCounters(requestsTotal, ["route", "status", "code"])

export const recordRequest = (route: string, status: number, code: string): void =>
  observe(requestCounter(route, String(status), code), 1)

export const moderationFlagged = Metric.counter("modelgate_moderation_flagged_total", {
  description: "Requests flagged by moderation, by group and category",
  incremental: true
})

export const unpricedRequests = Metric.counter("modelgate_unpriced_requests_total", {
  description: "Settlements charged the fallback price (no configured or operator price, not in the price package), by model",
  incremental: true
})

export const usageEstimated = Metric.counter("modelgate_usage_estimated_total", {
  description: "Settlements of streams the upstream never reported usage for (cut or abandoned), counted with a tokenizer, by group",
  incremental: true
})

/** Responses WebSocket connections open now (a gauge kept as a counter that goes down too). */
export const websocketConnections = Metric.gauge("modelgate_websocket_connections", {
  description: "Responses WebSocket connections open now"
})

export const websocketTurns = Metric.counter("modelgate_websocket_turns_total", {
  description: "Responses WebSocket turns by outcome (completed, failed, incomplete, refused, warm_up)",
  incremental: true
})
