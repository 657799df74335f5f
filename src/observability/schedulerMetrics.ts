/**
 * The scheduler's metrics. Counters are bumped where things happen (the scheduler's core for
 * cooldowns, core/upstreamCall.ts for failovers); the slot gauges are read from the store when
 * /metrics is scraped (src/endpoints/ops.ts), so taking and giving back a slot costs nothing extra
 * on the request path.
 *
 * They live here, not behind the Scheduler contract: a Prometheus series is one per process
 * whichever Scheduler implementation runs (in-process or Redis, or a test layer), the upstream call
 * counts failovers it decides itself, and as contract members every test layer would have to carry
 * them.
 */
import { Metric } from "effect"

export const failoversTotal = Metric.counter("modelgate_failovers_total", {
  description: "Requests moved to another upstream account before anything reached the client, by reason",
  incremental: true
})

export const cooldownsTotal = Metric.counter("modelgate_account_cooldowns_total", {
  description: "Upstream accounts cooled down or taken out, by account and reason",
  incremental: true
})

export const slotsInUse = Metric.gauge("modelgate_slots_in_use", {
  description: "Concurrency slots held, by kind (account, key, user) and name"
})

export const slotQueueLength = Metric.gauge("modelgate_slot_queue_length", {
  description: "Requests waiting for a concurrency slot, by kind (account, key, user) and name"
})

export const countFailover = (reason: string) => Metric.update(Metric.withAttributes(failoversTotal, { reason }), 1)

export const countCooldown = (account: string, reason: string) =>
  Metric.update(Metric.withAttributes(cooldownsTotal, { account, reason }), 1)
