/**
 * Effect metrics for the gateway and their Prometheus text rendering for GET /metrics.
 */
import { Effect, Metric, MetricBoundaries, MetricLabel, MetricState, Option } from "effect"
import { Scheduler } from "../services/Scheduler.js"
import { slotQueueLength, slotsInUse } from "../services/scheduler/metrics.js"

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

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const labels = (tags: ReadonlyArray<{ key: string; value: string }>, extra?: readonly [string, string]) => {
  const all = extra ? [...tags.map((t) => [t.key, t.value] as const), extra] : tags.map((t) => [t.key, t.value] as const)
  return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
}

/** Pools already reported: one that has since gone quiet (or vanished from Redis) is reported as 0. */
const reportedPools = new Set<string>()

/**
 * The slot gauges, read from the scheduler's store at scrape time rather than updated on every
 * acquire and release (cheaper per request; with Redis the figures are cluster-wide).
 */
const collectSlotGauges = Effect.flatMap(Effect.serviceOption(Scheduler), (scheduler) =>
  Option.match(scheduler, {
    onNone: () => Effect.void,
    onSome: (s) =>
      s.stats.pipe(
        Effect.flatMap((stats) => {
          const seen = new Map<string, { inUse: number; waiting: number }>()
          for (const pool of reportedPools) seen.set(pool, { inUse: 0, waiting: 0 })
          for (const p of stats) seen.set(p.pool, p)
          return Effect.forEach(seen, ([pool, { inUse, waiting }]) => {
            reportedPools.add(pool)
            const at = pool.indexOf(":")
            const tags = [
              MetricLabel.make("kind", at < 0 ? "other" : pool.slice(0, at)),
              MetricLabel.make("name", at < 0 ? pool : pool.slice(at + 1))
            ]
            return Effect.zipRight(
              Metric.set(Metric.taggedWithLabels(slotsInUse, tags), inUse),
              Metric.set(Metric.taggedWithLabels(slotQueueLength, tags), waiting)
            )
          }, { discard: true })
        }),
        Effect.catchAll((e) => Effect.logWarning("slot gauges unavailable").pipe(Effect.annotateLogs({ error: e.message })))
      )
  }))

/** Prometheus text exposition (version 0.0.4) of every metric in the registry. */
export const prometheusText = Effect.zipRight(collectSlotGauges, Effect.map(Metric.snapshot, (pairs) => {
  const byName = new Map<string, { type: string; help: string; lines: Array<string> }>()
  for (const { metricKey, metricState } of pairs) {
    const name = metricKey.name.replace(/[^a-zA-Z0-9_:]/g, "_")
    const help = metricKey.description._tag === "Some" ? metricKey.description.value : name
    const tags = metricKey.tags
    let entry = byName.get(name)
    const add = (type: string) => {
      if (!entry) byName.set(name, entry = { type, help, lines: [] })
      return entry.lines
    }
    if (MetricState.isCounterState(metricState)) {
      add("counter").push(`${name}${labels(tags)} ${metricState.count}`)
    } else if (MetricState.isGaugeState(metricState)) {
      add("gauge").push(`${name}${labels(tags)} ${metricState.value}`)
    } else if (MetricState.isHistogramState(metricState)) {
      const lines = add("histogram")
      for (const [bound, count] of metricState.buckets) {
        lines.push(`${name}_bucket${labels(tags, ["le", Number.isFinite(bound) ? String(bound) : "+Inf"])} ${count}`)
      }
      if (!metricState.buckets.some(([b]) => !Number.isFinite(b))) {
        lines.push(`${name}_bucket${labels(tags, ["le", "+Inf"])} ${metricState.count}`)
      }
      lines.push(`${name}_sum${labels(tags)} ${metricState.sum}`)
      lines.push(`${name}_count${labels(tags)} ${metricState.count}`)
    }
  }
  let out = ""
  for (const [name, { type, help, lines }] of byName) {
    out += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${lines.join("\n")}\n`
  }
  return out
}))

export const moderationFlagged = Metric.counter("modelgate_moderation_flagged_total", {
  description: "Requests flagged by moderation, by group and category",
  incremental: true
})
