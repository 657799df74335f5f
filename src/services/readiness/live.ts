/**
 * Readiness from probes: not ready while the gateway drains (Lifecycle.shuttingDown), else ready
 * when every probe answers. Probes run concurrently, each within `timeoutMillis` (1 s): a probe
 * that hangs (a database that accepts connections and never answers) reads as `timeout`, and its
 * interruption finishes in the background, so /readyz answers within the timeout whatever the probe
 * does. A check that changes state is logged once (the failure with its cause, Warn; the recovery, Info).
 *
 * The probes the gateway uses: `databaseProbe` (`SELECT 1` on the store's SqlClient, the same pool
 * the requests use) and `redisProbe` (PING on a connection of its own to REDIS_URL). Details (figures
 * shown beside the checks, deciding nothing): `journalDetail`, the settlement journal's depth.
 */
import { Cause, Effect, Exit, Fiber, Layer, Option, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { StoreError } from "../../domain/errors.js"
import { SettlementJournal } from "../journal/SettlementJournal.js"
import { Lifecycle, type LifecycleShape } from "../lifecycle/Lifecycle.js"
import { openConnection, redisError } from "../scheduler/redisClient.js"
import { type CheckStatus, type Detail, type Probe, Readiness, type ReadinessReport, type ReadinessShape } from "./Readiness.js"

export interface ReadinessOptions {
  /** How long each probe may take (default 1000 ms). */
  readonly timeoutMillis?: number
}

export const DEFAULT_TIMEOUT_MILLIS = 1_000

/** The failure's message and its cause's (a SqlError's own says only "Failed to execute statement"). */
const causeText = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  if (!(e instanceof Error)) return String(e)
  return e.cause instanceof Error && !e.message.includes(e.cause.message) ? `${e.message}: ${e.cause.message}` : e.message
}

const problem = (name: string, status: CheckStatus) => (status === "timeout" ? `${name} timed out` : `${name} unreachable`)

/** Readiness over the lifecycle and already built probes. */
export const make = (
  lifecycle: LifecycleShape,
  probes: ReadonlyArray<Probe>,
  options: ReadinessOptions = {},
  details: ReadonlyArray<Detail> = []
): ReadinessShape => {
  const timeoutMillis = options.timeoutMillis ?? DEFAULT_TIMEOUT_MILLIS
  const last = new Map<string, CheckStatus>()

  /** The probe's exit, or None when it did not answer within the timeout. */
  const outcome = (probe: Probe): Effect.Effect<Option.Option<Exit.Exit<unknown, unknown>>> =>
    // The probe runs in a fiber of its own: one that hangs is given up on at the timeout, and its
    // interruption finishes in the background, so the answer never waits for it.
    Effect.flatMap(Effect.forkDetach(probe.check), (fiber) =>
      Effect.tap(
        Effect.timeoutOption(Fiber.await(fiber), timeoutMillis),
        (done) => (Option.isNone(done) ? Effect.asVoid(Effect.forkDetach(Fiber.interrupt(fiber))) : Effect.void)
      ))

  const run = (probe: Probe): Effect.Effect<CheckStatus> =>
    Effect.flatMap(outcome(probe), (done) => {
      const status: CheckStatus = Option.isNone(done) ? "timeout" : Exit.isFailure(done.value) ? "unreachable" : "ok"
      const before = last.get(probe.name)
      last.set(probe.name, status)
      if (status === before || (status === "ok" && before === undefined)) return Effect.succeed(status)
      const log = status === "ok"
        ? Effect.logInfo("readiness check ok again")
        : Effect.logWarning("readiness check failed").pipe(
          Effect.annotateLogs(
            "error",
            Option.isSome(done) && Exit.isFailure(done.value) ? causeText(done.value.cause) : `no answer within ${timeoutMillis} ms`
          )
        )
      return Effect.as(Effect.annotateLogs(log, { check: probe.name, status }), status)
    })

  const readDetails: Effect.Effect<Record<string, unknown> | undefined> = details.length === 0
    ? Effect.succeed(undefined)
    : Effect.map(Effect.forEach(details, (d) => d.read), (values) => {
      const out: Record<string, unknown> = {}
      details.forEach((d, i) => {
        out[d.name] = values[i]
      })
      return out
    })

  return {
    check: Effect.map(
      Effect.all([Effect.forEach(probes, run, { concurrency: "unbounded" }), readDetails]),
      ([statuses, detail]): ReadinessReport => {
        const checks: Record<string, CheckStatus> = {}
        const problems: Array<string> = lifecycle.shuttingDown() ? ["draining"] : []
        probes.forEach((probe, i) => {
          const status = statuses[i] ?? "unreachable"
          checks[probe.name] = status
          if (status !== "ok") problems.push(problem(probe.name, status))
        })
        const shown = detail === undefined ? {} : { detail }
        return problems.length === 0
          ? { status: "ready", checks, ...shown }
          : { status: "not_ready", reason: problems.join(", "), checks, ...shown }
      }
    )
  }
}

/**
 * Readiness over the Lifecycle and the given probes, each built once with the layer (a probe may
 * hold a resource in the layer's scope, as `redisProbe` holds its connection). No probes: ready
 * unless draining (the in-memory services have nothing to ask).
 */
export const layer = <E = never, R = never>(
  probes: ReadonlyArray<Effect.Effect<Probe, E, R>> = [],
  options: ReadinessOptions = {},
  details: ReadonlyArray<Effect.Effect<Detail, E, R>> = []
): Layer.Layer<Readiness, E, Lifecycle | Exclude<R, Scope.Scope>> =>
  Layer.effect(
    Readiness,
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      return make(lifecycle, yield* Effect.all(probes), options, yield* Effect.all(details))
    })
  )

/** `SELECT 1` on the SqlClient: the database answers. */
export const databaseProbe: Effect.Effect<Probe, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql): Probe => ({ name: "database", check: sql`SELECT 1` })
)

/**
 * PING on a connection of its own to `url` (opened with the layer, like the scheduler's, failing
 * the start when Redis is unreachable then; later it reconnects by itself and a PING while it is
 * away fails at once).
 */
export const redisProbe = (url: Redacted.Redacted<string> | string): Effect.Effect<Probe, StoreError, Scope.Scope> =>
  Effect.map(
    openConnection(typeof url === "string" ? url : Redacted.value(url), "readiness"),
    (client): Probe => ({ name: "redis", check: Effect.tryPromise({ try: () => client.ping(), catch: (e) => redisError("PING", e) }) })
  )

/** The gateway's readiness: the database (the SqlClient in context), and Redis at `redisUrl` when given. */
export const layerDatabase = (
  redisUrl?: Redacted.Redacted<string> | string
): Layer.Layer<Readiness, StoreError, Lifecycle | SqlClient.SqlClient> =>
  layer<StoreError, SqlClient.SqlClient | Scope.Scope>(
    redisUrl === undefined ? [databaseProbe] : [databaseProbe, redisProbe(redisUrl)]
  )

/** `settlement_journal: { depth }`: settlements taken while the store was away, not yet written to it. */
export const journalDetail: Effect.Effect<Detail, never, SettlementJournal> = Effect.map(
  SettlementJournal,
  (journal): Detail => ({ name: "settlement_journal", read: Effect.sync(() => ({ depth: journal.depth() })) })
)

/** `layerDatabase` with the settlement journal's depth in the report's detail. */
export const layerDatabaseJournaled = (
  redisUrl?: Redacted.Redacted<string> | string
): Layer.Layer<Readiness, StoreError, Lifecycle | SqlClient.SqlClient | SettlementJournal> =>
  layer<StoreError, SqlClient.SqlClient | SettlementJournal | Scope.Scope>(
    redisUrl === undefined ? [databaseProbe] : [databaseProbe, redisProbe(redisUrl)],
    {},
    [journalDetail]
  )
