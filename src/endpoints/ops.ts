/**
 * The operator's endpoints: GET /health (liveness), GET /readyz (readiness: the database and Redis
 * answer and the gateway is not draining) and GET /metrics (Prometheus text of every Effect metric
 * in the process, through effect/observability's PrometheusMetrics, the scheduler's slot gauges read
 * at scrape time, then the process's own figures: observability/processMetrics.ts).
 */
import { timingSafeEqual } from "node:crypto"
import { Effect, Metric, Redacted } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { Unauthenticated } from "../domain/errors.js"
import { declareWebsocketSeries, keyLabel } from "../observability/metrics.js"
import { type EventLoopMonitor, processMetricsText } from "../observability/processMetrics.js"
import type { ReadinessShape } from "../services/readiness/Readiness.js"
import type { SchedulerShape } from "../services/scheduler/Scheduler.js"
import { slotQueueLength, slotsInUse } from "../observability/schedulerMetrics.js"
import { json } from "./kit/reply.js"

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
        const attributes = { kind, name: kind === "key" ? keyLabel(name) : name }
        return Effect.andThen(
          Metric.update(Metric.withAttributes(slotsInUse, attributes), inUse),
          Metric.update(Metric.withAttributes(slotQueueLength, attributes), waiting)
        )
      }, { discard: true })
    }),
    Effect.catch((e) => Effect.logWarning("slot gauges unavailable").pipe(Effect.annotateLogs({ error: e.message })))
  )

/**
 * Prometheus text exposition (version 0.0.4) of every metric in the registry, the series that
 * exist before their first event (declareWebsocketSeries) among them, and the process's figures.
 */
export const prometheusText = (scheduler: SchedulerShape, loop: EventLoopMonitor): Effect.Effect<string> =>
  collectSlotGauges(scheduler).pipe(
    Effect.andThen(declareWebsocketSeries),
    Effect.andThen(PrometheusMetrics.format()),
    Effect.flatMap((text) => Effect.map(processMetricsText(loop), (process) => text + process))
  )

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
export const metrics = (scheduler: SchedulerShape, token: Redacted.Redacted<string> | undefined, loop: EventLoopMonitor) => {
  const render = Effect.map(
    prometheusText(scheduler, loop),
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
