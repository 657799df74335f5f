/**
 * The gateway's Effect metrics (requests, upstream timings, tokens, cost, moderation) and the
 * helpers that record them cheaply. GET /metrics renders every metric (src/endpoints/ops.ts).
 */
import { Effect, Metric } from "effect"

export const requestsTotal = Metric.counter("modelgate_requests_total", {
  description: "HTTP requests by route, status and error code",
  incremental: true
})

const latencyBuckets = Metric.exponentialBoundaries({ start: 5, factor: 2, count: 14 })

export const upstreamLatency = Metric.histogram("modelgate_upstream_latency_ms", {
  boundaries: latencyBuckets,
  description: "Upstream call duration until the answer is complete"
})

export const upstreamFirstByte = Metric.histogram("modelgate_upstream_first_byte_ms", {
  boundaries: latencyBuckets,
  description: "Time from sending the upstream request to its response headers"
})

export const tokensTotal = Metric.counter("modelgate_tokens_total", { description: "Tokens settled", incremental: true })
export const costMicrosTotal = Metric.counter("modelgate_cost_micro_usd_total", {
  description: "Cost settled, micro-dollars",
  incremental: true
})

/**
 * `base` with the given attribute values (`Metric.withAttributes`), each combination built once:
 * the attributed metric caches its series key, and the combinations (routes, models, groups) are
 * few. Record with `Metric.update(counter(...values), n)`.
 */
export const taggedCounters = (base: Metric.Counter<number>, names: ReadonlyArray<string>) => {
  const built = new Map<string, Metric.Counter<number>>()
  return (...values: ReadonlyArray<string>): Metric.Counter<number> => {
    const id = values.join("\u0000")
    let counter = built.get(id)
    if (counter === undefined) {
      const attributes: Record<string, string> = {}
      names.forEach((name, i) => {
        attributes[name] = values[i] ?? ""
      })
      counter = Metric.withAttributes(base, attributes)
      built.set(id, counter)
    }
    return counter
  }
}

const requestCounter = taggedCounters(requestsTotal, ["route", "status", "code"])

/** Counts an answered request by route, status and our code (`Metric.update`). */
export const countRequest = (route: string, status: number, code: string): Effect.Effect<void> =>
  Metric.update(requestCounter(route, String(status), code), 1)

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
