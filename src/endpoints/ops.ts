/**
 * The operator's endpoints: GET /health (liveness), GET /readyz (readiness: the database and Redis
 * answer and the gateway is not draining) and GET /metrics (Prometheus text of every Effect metric
 * in the process, the scheduler's slot gauges read at scrape time).
 */
import { randomBytes, timingSafeEqual } from "node:crypto"
import { Effect, Metric, MetricLabel, MetricState, Redacted } from "effect"
import { Unauthenticated } from "../domain/errors.js"
import type { ReadinessShape } from "../services/readiness/Readiness.js"
import type { SchedulerShape } from "../services/scheduler/Scheduler.js"
import { slotQueueLength, slotsInUse } from "../services/scheduler/metrics.js"
import { json } from "./kit/reply.js"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

const labels = (tags: ReadonlyArray<{ key: string; value: string }>, extra?: readonly [string, string]) => {
  const all = extra ? [...tags.map((t) => [t.key, t.value] as const), extra] : tags.map((t) => [t.key, t.value] as const)
  return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
}

/**
 * A key's label: its configured name, or, for a key without one (whose id is derived from its
 * hash), a random alias kept for the process: a hash prefix in a public scrape would let anyone
 * test guesses of weak keys offline.
 */
const keyAliases = new Map<string, string>()
const keyLabel = (id: string): string => {
  if (!/^key-[0-9a-f]{16}$/.test(id)) return id
  let alias = keyAliases.get(id)
  if (alias === undefined) keyAliases.set(id, alias = `key-${randomBytes(6).toString("hex")}`)
  return alias
}

/** Pools already reported: one that has since gone quiet (or vanished from Redis) is reported as 0. */
const reportedPools = new Set<string>()

/**
 * The slot gauges, read from the scheduler's store at scrape time rather than updated on every
 * acquire and release (cheaper per request; with Redis the figures are cluster-wide).
 */
const collectSlotGauges = (scheduler: SchedulerShape) =>
  scheduler.stats.pipe(
    Effect.flatMap((stats) => {
      const seen = new Map<string, { inUse: number; waiting: number }>()
      for (const pool of reportedPools) seen.set(pool, { inUse: 0, waiting: 0 })
      for (const p of stats) seen.set(p.pool, p)
      return Effect.forEach(seen, ([pool, { inUse, waiting }]) => {
        reportedPools.add(pool)
        const at = pool.indexOf(":")
        const kind = at < 0 ? "other" : pool.slice(0, at)
        const name = at < 0 ? pool : pool.slice(at + 1)
        const tags = [
          MetricLabel.make("kind", kind),
          MetricLabel.make("name", kind === "key" ? keyLabel(name) : name)
        ]
        return Effect.zipRight(
          Metric.set(Metric.taggedWithLabels(slotsInUse, tags), inUse),
          Metric.set(Metric.taggedWithLabels(slotQueueLength, tags), waiting)
        )
      }, { discard: true })
    }),
    Effect.catchAll((e) => Effect.logWarning("slot gauges unavailable").pipe(Effect.annotateLogs({ error: e.message })))
  )

/** Prometheus text exposition (version 0.0.4) of every metric in the registry. */
export const prometheusText = (scheduler: SchedulerShape) => Effect.zipRight(collectSlotGauges(scheduler), Effect.map(Metric.snapshot, (pairs) => {
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


export const health = Effect.succeed(json({ status: "ok" }))

const NO_STORE = { "cache-control": "no-store" }

/**
 * GET /readyz: 200 `{"status":"ready","checks":{...}}`, or 503 `{"status":"not_ready","reason",
 * "checks"}`. No token: it tells which dependency is failing and nothing more (no address, no error text).
 */
export const readyz = (readiness: ReadinessShape) =>
  Effect.map(readiness.check, (report) => json(report, report.status === "ready" ? 200 : 503, NO_STORE))

/**
 * GET /metrics; with a token (METRICS_TOKEN), only for `Authorization: Bearer <token>` (401 in the
 * envelope otherwise), so the scrape can be exposed where the API is.
 */
export const metrics = (scheduler: SchedulerShape, token: Redacted.Redacted<string> | undefined) => {
  const render = Effect.map(
    prometheusText(scheduler),
    (body) => HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4" })
  )
  if (token === undefined) return render
  const expected = Buffer.from(`Bearer ${Redacted.value(token)}`)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const given = Buffer.from(request.headers["authorization"] ?? "")
    return given.length === expected.length && timingSafeEqual(given, expected)
      ? render
      : Effect.fail(new Unauthenticated({ code: "invalid_api_key", message: "This metrics endpoint needs its bearer token" }))
  })
}
