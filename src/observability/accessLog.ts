/**
 * The access log: one Info line per request, once it is answered (or the client left), with what
 * an operator greps for: request id, method, path, status, our error code, and the client's wait;
 * then, where the request got that far, who called (key id, group), the model, the upstream account,
 * its status, the attempts, the upstream latency, tokens in and out, and the cost. Never key material
 * or prompt text: the key appears by its id (its configured name, or an id derived from its hash).
 *
 * Two layers, one line. `layerLogger` logs through Effect's logger (the line is a `request`
 * message with the fields as annotations), so whatever logger the embedder installed sees it, and
 * tests capture it. `layer`, which `main` uses, writes the same JSON line straight to the process
 * log's batched stdout writer: measured, Effect's log call with six annotations costs about 18 µs
 * per request before any formatting, more than authentication does.
 *
 * The admin listener's calls have a line of their own, `admin request` (`recordAdmin`): who called
 * (the actor, never the token) and the route template instead of a key's facts. A method apart, so
 * the gateway's line and its writer carry no branch for it.
 */
import { Context, Effect, Layer, LogLevel, References } from "effect"
import { stdoutLines } from "./logger.js"
import type { RequestFacts } from "./requestFacts.js"

export interface AccessEntry {
  readonly requestId: string
  readonly method: string
  readonly path: string
  readonly status: number
  /** Ours: `ok`, an envelope code, or `client_closed_request`. */
  readonly code: string
  /** From the request's start until the client had its answer (not the settlement after it). */
  readonly durationMs: number
  /** What the request came to past authentication (absent fields: it did not get that far). */
  readonly facts?: RequestFacts | undefined
}

/** The facts as log annotations, in a fixed order, leaving out what is unknown. */
const factFields = (f: RequestFacts | undefined): ReadonlyArray<readonly [string, string | number]> => {
  if (f === undefined) return []
  const out: Array<readonly [string, string | number]> = []
  out.push(["door", f.door], ["key", f.keyId], ["group", f.group])
  if (f.model !== undefined) out.push(["model", f.model])
  if (f.account !== undefined) out.push(["account", f.account])
  if (f.upstreamStatus !== undefined) out.push(["upstream_status", f.upstreamStatus])
  if (f.attempts !== undefined) out.push(["attempts", f.attempts])
  if (f.upstreamLatencyMs !== undefined) out.push(["upstream_ms", f.upstreamLatencyMs])
  if (f.inputTokens !== undefined) out.push(["input_tokens", f.inputTokens])
  if (f.outputTokens !== undefined) out.push(["output_tokens", f.outputTokens])
  if (f.costMicros !== undefined) out.push(["cost_usd", f.costMicros / 1_000_000])
  return out
}

/** One call to the admin API (its own listener): never the token or the Authorization header. */
export interface AdminAccessEntry {
  readonly requestId: string
  readonly method: string
  /** Without the query string. */
  readonly path: string
  /** The matched route's template (`/admin/users/:name`; `/*`: no route, answered 404). */
  readonly route: string
  readonly status: number
  /** `ok`, the envelope's code, or `client_closed_request`. */
  readonly code: string
  readonly durationMs: number
  /** `admin-api` when the admin token was accepted (the audit trail's actor), else `anonymous`. */
  readonly actor: string
  /** The caller's own name for itself (`x-admin-actor`, sanitised): a claim, not checked. */
  readonly operator?: string | undefined
}

const adminFields = (e: AdminAccessEntry): Record<string, string | number> => {
  const fields: Record<string, string | number> = {
    request_id: e.requestId,
    method: e.method,
    path: e.path,
    route: e.route,
    status: e.status,
    code: e.code,
    duration_ms: e.durationMs,
    actor: e.actor
  }
  if (e.operator !== undefined) fields["operator"] = e.operator
  return fields
}

/** The line `formatLine` would write for `Effect.logInfo("admin request")` with these annotations. */
export const adminAccessLine = (e: AdminAccessEntry, at: Date): string =>
  `{"message":"admin request","logLevel":"INFO","timestamp":"${at.toISOString()}","annotations":${JSON.stringify(adminFields(e))}}\n`

const adminViaLogger = (e: AdminAccessEntry): Effect.Effect<void> =>
  Effect.logInfo("admin request").pipe(Effect.annotateLogs(adminFields(e)))

export interface AccessLogShape {
  readonly record: (entry: AccessEntry) => Effect.Effect<void>
  /** An admin API call; an implementation without it logs them through Effect's logger (`recordAdminCall`). */
  readonly recordAdmin?: ((entry: AdminAccessEntry) => Effect.Effect<void>) | undefined
}

/** The admin call's line through `log`, or through Effect's logger when `log` has no `recordAdmin`. */
export const recordAdminCall = (log: AccessLogShape, entry: AdminAccessEntry): Effect.Effect<void> =>
  log.recordAdmin === undefined ? adminViaLogger(entry) : log.recordAdmin(entry)

/**
 * `factFields` as JSON members (`,"key":…`), appended straight to one string: this runs for every
 * request, and the pairs, the mapped array and its join cost more than the line itself. The
 * fields and their order are factFields' (test/http/accessLogFacts.test.ts holds them equal).
 */
const factMembers = (f: RequestFacts | undefined): string => {
  if (f === undefined) return ""
  let s = `,"door":"${f.door}","key":${JSON.stringify(f.keyId)},"group":${JSON.stringify(f.group)}`
  if (f.model !== undefined) s += `,"model":${JSON.stringify(f.model)}`
  if (f.account !== undefined) s += `,"account":${JSON.stringify(f.account)}`
  if (f.upstreamStatus !== undefined) s += `,"upstream_status":${f.upstreamStatus}`
  if (f.attempts !== undefined) s += `,"attempts":${f.attempts}`
  if (f.upstreamLatencyMs !== undefined) s += `,"upstream_ms":${f.upstreamLatencyMs}`
  if (f.inputTokens !== undefined) s += `,"input_tokens":${f.inputTokens}`
  if (f.outputTokens !== undefined) s += `,"output_tokens":${f.outputTokens}`
  if (f.costMicros !== undefined) s += `,"cost_usd":${f.costMicros / 1_000_000}`
  return s
}

/** The line `formatLine` would write for `Effect.logInfo("request")` with these annotations. */
export const accessLine = (e: AccessEntry, at: Date): string =>
  `{"message":"request","logLevel":"INFO","timestamp":"${at.toISOString()}","annotations":{` +
  `"request_id":${JSON.stringify(e.requestId)},"method":${JSON.stringify(e.method)},"path":${JSON.stringify(e.path)},` +
  `"status":${e.status},"code":${JSON.stringify(e.code)},"duration_ms":${e.durationMs}${factMembers(e.facts)}}}\n`

const viaLogger: AccessLogShape = {
  record: (e) =>
    Effect.logInfo("request").pipe(
      Effect.annotateLogs({
        request_id: e.requestId,
        method: e.method,
        path: e.path,
        status: e.status,
        code: e.code,
        duration_ms: e.durationMs,
        ...Object.fromEntries(factFields(e.facts))
      })
    ),
  recordAdmin: adminViaLogger
}

export class AccessLog extends Context.Service<AccessLog, AccessLogShape>()("modelgate/AccessLog") {
  /** Through Effect's logger: the embedder's logger sees it, tests capture it. */
  static readonly layerLogger = Layer.succeed(AccessLog, viaLogger)

  /**
   * Lines to `write`, when the minimum log level (LOG_LEVEL, as set where this layer is built)
   * lets Info lines through.
   */
  static readonly layerWriter = (write: (line: string) => void) =>
    Layer.effect(
      AccessLog,
      Effect.map(References.MinimumLogLevel, (minimum): AccessLogShape =>
        LogLevel.isLessThan("Info", minimum)
          ? { record: () => Effect.void }
          : {
            // Dated by the Effect Clock (TestClock in tests), read without an Effect step of its own.
            record: (e) => Effect.clockWith((clock) => Effect.sync(() => write(accessLine(e, new Date(clock.currentTimeMillisUnsafe()))))),
            recordAdmin: (e) =>
              Effect.clockWith((clock) => Effect.sync(() => write(adminAccessLine(e, new Date(clock.currentTimeMillisUnsafe())))))
          })
    )

  /** Straight to the process log on stdout, through its batched writer (observability/logger.ts). */
  static readonly layer: Layer.Layer<AccessLog> = Layer.unwrap(Effect.sync(() => AccessLog.layerWriter(stdoutLines())))

  /**
   * Each request's entry pushed to `entries`, each admin call's to `adminEntries` (tests read what
   * was logged, as values); without `adminEntries`, admin calls go through Effect's logger.
   */
  static readonly layerTest = (entries: Array<AccessEntry>, adminEntries?: Array<AdminAccessEntry>): Layer.Layer<AccessLog> =>
    Layer.succeed(AccessLog, {
      record: (e) => Effect.sync(() => void entries.push(e)),
      recordAdmin: adminEntries === undefined ? undefined : (e) => Effect.sync(() => void adminEntries.push(e))
    })
}
