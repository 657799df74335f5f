/**
 * The gateway's Effect metrics (requests, upstream timings, tokens, cost, moderation) and the
 * helpers that record them cheaply. GET /metrics renders every metric (src/endpoints/ops.ts).
 */
import { randomBytes } from "node:crypto"
import { Effect, Metric } from "effect"
import type { TokenUsage } from "../domain/usage.js"

export const requestsTotal = Metric.counter("modelgate_requests_total", {
  description: "HTTP requests by route, status and error code",
  incremental: true
})

/** 5 ms to 41 s, doubling (the `_ms` histograms' buckets, in seconds). */
const secondsBuckets = Metric.exponentialBoundaries({ start: 0.005, factor: 2, count: 14 })

export const upstreamLatency = Metric.histogram("modelgate_upstream_latency_seconds", {
  boundaries: secondsBuckets,
  description: "Upstream call duration until the answer is complete, seconds"
})

export const upstreamFirstByte = Metric.histogram("modelgate_upstream_first_byte_seconds", {
  boundaries: secondsBuckets,
  description: "Time from sending the upstream request to its response headers, seconds"
})

// The same in milliseconds under their former names, kept for this release so dashboards can move
// to the `_seconds` names (Prometheus' base unit); deprecated, to be removed in the next.
const latencyBucketsMs = Metric.exponentialBoundaries({ start: 5, factor: 2, count: 14 })
const upstreamLatencyMs = Metric.histogram("modelgate_upstream_latency_ms", {
  boundaries: latencyBucketsMs,
  description: "Deprecated: modelgate_upstream_latency_seconds in milliseconds"
})
const upstreamFirstByteMs = Metric.histogram("modelgate_upstream_first_byte_ms", {
  boundaries: latencyBucketsMs,
  description: "Deprecated: modelgate_upstream_first_byte_seconds in milliseconds"
})

/** Records an upstream call's duration until its answer is complete (`modelgate_upstream_latency_seconds`). */
export const observeUpstreamLatency = (millis: number): Effect.Effect<void> =>
  Effect.andThen(Metric.update(upstreamLatency, millis / 1000), Metric.update(upstreamLatencyMs, millis))

/** Records an attempt's time to its answer's headers (`modelgate_upstream_first_byte_seconds`). */
export const observeUpstreamFirstByte = (millis: number): Effect.Effect<void> =>
  Effect.andThen(Metric.update(upstreamFirstByte, millis / 1000), Metric.update(upstreamFirstByteMs, millis))

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

/**
 * A key's metric label: its configured name, or, for a key without one (whose id is derived from
 * its hash), a random alias kept for the process: a hash prefix in a public scrape would let anyone
 * test guesses of weak keys offline. Keys are configured or issued by an operator, so the label is bounded.
 */
const keyAliases = new Map<string, string>()
export const keyLabel = (id: string): string => {
  if (!/^key-[0-9a-f]{16}$/.test(id)) return id
  let alias = keyAliases.get(id)
  if (alias === undefined) keyAliases.set(id, alias = `key-${randomBytes(6).toString("hex")}`)
  return alias
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

export const websocketTurnOutcomes = ["completed", "failed", "incomplete", "refused", "warm_up"] as const

/**
 * The WebSocket series, at zero until something is counted: a metric exists in the registry only
 * once updated, and a dashboard or alert should read 0 on a gateway no client has connected to
 * yet, not "no data". Adding 0 leaves a value already counted as it is, so running it again is harmless.
 */
export const declareWebsocketSeries: Effect.Effect<void> = Effect.andThen(
  Metric.modify(websocketConnections, 0),
  Effect.forEach(
    websocketTurnOutcomes,
    (outcome) => Metric.update(Metric.withAttributes(websocketTurns, { outcome }), 0),
    { discard: true }
  )
)

export const inputTokensByAccount = Metric.counter("modelgate_input_tokens_total", {
  description: "Input tokens settled, by upstream account and whether the provider read them from its prompt cache (cache=read) or not (cache=uncached, cache writes included)",
  incremental: true
})

export const inputTokensByKey = Metric.counter("modelgate_key_input_tokens_total", {
  description: "Input tokens settled, by API key and whether the provider read them from its prompt cache (cache=read) or not (cache=uncached, cache writes included)",
  incremental: true
})

const accountInput = taggedCounters(inputTokensByAccount, ["account", "cache"])
const keyInput = taggedCounters(inputTokensByKey, ["key", "cache"])
/**
 * Counts a settled usage's input tokens as read from the prompt cache or not, per account (when
 * one answered) and per key. `usage.inputTokens` includes the cached reads (domain/usage.ts).
 */
export const countInputTokens = (account: string | undefined, keyId: string, usage: TokenUsage): Effect.Effect<void> =>
  Effect.suspend(() => {
    const read = Math.min(Math.max(usage.cacheReadTokens, 0), Math.max(usage.inputTokens, 0))
    const uncached = Math.max(usage.inputTokens, 0) - read
    const key = keyLabel(keyId)
    const byKey = Effect.andThen(Metric.update(keyInput(key, "read"), read), Metric.update(keyInput(key, "uncached"), uncached))
    if (account === undefined) return byKey
    return Effect.andThen(
      byKey,
      Effect.andThen(Metric.update(accountInput(account, "read"), read), Metric.update(accountInput(account, "uncached"), uncached))
    )
  })

/**
 * Settlements in the local journal (services/journal): taken while the store was unreachable and
 * not yet written to it. Above zero for long means the store is still away or refuses them.
 */
export const settlementJournalDepth = Metric.gauge("modelgate_settlement_journal_depth", {
  description: "Settlements in the local journal, taken while the store was unreachable and not yet written to it"
})

export const settlementsReplayed = Metric.counter("modelgate_settlements_replayed_total", {
  description: "Settlements the local journal handed to the store once it took them again (a repeat it already had included)",
  incremental: true
})
