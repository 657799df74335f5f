/**
 * Readiness: may this instance take traffic now? GET /readyz answers from it. Ready means the
 * gateway is not draining (shutdown has not begun) and every probe answered within its timeout.
 * Liveness (/health) is not this service's: a live but unready gateway keeps running.
 *
 * This is the contract; live.ts builds it from probes (the database's, Redis's when configured).
 */
import { Context, Effect, Layer } from "effect"

/** One dependency to ask: `check` succeeds when it answers. */
export interface Probe {
  /** The key in the report's `checks` (`database`, `redis`). */
  readonly name: string
  readonly check: Effect.Effect<unknown, unknown>
}

/**
 * A figure /readyz shows beside the checks (`detail`), read at each check; it does not decide
 * readiness (the settlement journal's depth: a store just back is ready while it drains).
 */
export interface Detail {
  /** The key in the report's `detail` (`settlement_journal`). */
  readonly name: string
  readonly read: Effect.Effect<unknown>
}

/** A probe's outcome: it answered, it failed, or it did not answer within the timeout. */
export type CheckStatus = "ok" | "unreachable" | "timeout"

/** What /readyz answers with (200 when `ready`, else 503). */
export interface ReadinessReport {
  readonly status: "ready" | "not_ready"
  /** Why not ready: `draining`, `database unreachable`, `redis timed out`, ... joined by ", ". */
  readonly reason?: string
  /** Every probe's outcome, in the order the probes were given. */
  readonly checks: Readonly<Record<string, CheckStatus>>
  /** Each Detail's figure, when there are any. */
  readonly detail?: Readonly<Record<string, unknown>>
}

export interface ReadinessShape {
  /** Runs the probes (concurrently, each within the timeout); never fails. */
  readonly check: Effect.Effect<ReadinessReport>
}

export class Readiness extends Context.Service<Readiness, ReadinessShape>()("modelgate/Readiness") {
  /** Always answers `report` (default: ready, nothing checked). */
  static readonly layerTest = (report: ReadinessReport = { status: "ready", checks: {} }) =>
    Layer.succeed(Readiness, { check: Effect.succeed(report) })
}
