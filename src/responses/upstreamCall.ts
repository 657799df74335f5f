/**
 * Calling upstream with failover: pick an account, send, and if the account failed in a way another
 * account may not (401/403/429/529/5xx, transport), release it and try the next, while nothing has
 * reached the client yet. Each attempt holds its account slot in its own scope, so a failed attempt
 * frees its slot at once and the winning attempt's slot lives as long as the request.
 */
import { Duration, Effect, ExecutionStrategy, Exit, Metric, Scope, Stream } from "effect"
import { NoAvailableAccount, UpstreamFailed, upstreamFailsOver, upstreamRefusedRequest } from "../domain/errors.js"
import type { Account, Principal } from "../domain/model.js"
import { upstreamFirstByte } from "../http/metrics.js"
import { Scheduler } from "../services/Scheduler.js"
import { Upstream, type UpstreamRequest, type UpstreamResponse } from "../upstream/Upstream.js"

export const MAX_ATTEMPTS = 3
const ERROR_BODY_LIMIT = 64 * 1024

const failoverStatus = upstreamFailsOver

const retryAfterOf = (headers: Readonly<Record<string, string>>): number | undefined => {
  const v = headers["retry-after"]
  if (v === undefined) return undefined
  const seconds = Number(v)
  if (Number.isFinite(seconds)) return Math.max(0, seconds)
  const date = Date.parse(v)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}

/** Reads the provider's error message (OpenAI or Anthropic shape) without trusting its size. */
const upstreamMessage = (body: string): { message: string | undefined; code: string | undefined } => {
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown; code?: unknown; type?: unknown } }
    const message = typeof json.error?.message === "string" ? json.error.message : undefined
    const code = typeof json.error?.code === "string" ? json.error.code : undefined
    return { message, code }
  } catch {
    return { message: undefined, code: undefined }
  }
}

/** What the client sees when an upstream refused: its own words for request problems, ours otherwise. */
export const upstreamError = (status: number, headers: Readonly<Record<string, string>>, body: string): UpstreamFailed => {
  const { code, message } = upstreamMessage(body)
  const retryAfterSeconds = retryAfterOf(headers)
  if (status === 429) {
    return new UpstreamFailed({
      status,
      code: "upstream_rate_limited",
      message: "Upstream rate limit exceeded, please retry later",
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds })
    })
  }
  if (upstreamRefusedRequest(status)) {
    const tooLong = message !== undefined && /prompt is too long|context length|context window/i.test(message)
    return new UpstreamFailed({
      status,
      code: tooLong ? "context_length_exceeded" : code ?? "upstream_invalid_request",
      message: message ?? `Upstream rejected the request (HTTP ${status})`
    })
  }
  if (status === 401 || status === 403) {
    return new UpstreamFailed({ status, code: "upstream_auth_failed", message: "Upstream authentication failed" })
  }
  if (status === 529) return new UpstreamFailed({ status, code: "upstream_overloaded", message: "Upstream is overloaded" })
  return new UpstreamFailed({ status, code: "upstream_error", message: `Upstream request failed (HTTP ${status})` })
}

const readLimited = (body: Stream.Stream<Uint8Array, UpstreamFailed>) =>
  body.pipe(
    Stream.runFoldWhile("", (acc) => acc.length < ERROR_BODY_LIMIT, (acc, chunk) => acc + Buffer.from(chunk).toString("utf8")),
    Effect.orElseSucceed(() => "")
  )

export interface Answer {
  readonly account: Account
  readonly response: UpstreamResponse
}

export const callUpstream = (
  principal: Principal,
  model: string,
  build: (account: Account) => UpstreamRequest
) =>
  Effect.gen(function*() {
    const scheduler = yield* Scheduler
    const upstream = yield* Upstream
    const requestScope = yield* Effect.scope
    const tried = new Set<string>()
    let last: UpstreamFailed | undefined
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const scope = yield* Scope.fork(requestScope, ExecutionStrategy.sequential)
      const outcome = yield* Effect.exit(Scope.extend(
        Effect.gen(function*() {
          const account = yield* scheduler.acquireAccount({ group: principal.group, model, exclude: tried })
          tried.add(account.name)
          const sent = yield* upstream.send(account, build(account)).pipe(
            Metric.trackDurationWith(upstreamFirstByte, Duration.toMillis),
            Effect.tapError((e) =>
              scheduler.report(account, { _tag: "Failure", status: e.status, retryAfterSeconds: undefined })
            )
          )
          if (sent.status >= 200 && sent.status < 300) {
            yield* scheduler.report(account, { _tag: "Success" })
            return { account, response: sent }
          }
          const body = yield* readLimited(sent.body)
          const error = upstreamError(sent.status, sent.headers, body)
          yield* scheduler.report(account, {
            _tag: "Failure",
            status: sent.status,
            retryAfterSeconds: retryAfterOf(sent.headers)
          })
          yield* Effect.logWarning("upstream attempt failed").pipe(
            Effect.annotateLogs({ account: account.name, status: sent.status, attempt })
          )
          return yield* error
        }),
        scope
      ))
      if (Exit.isSuccess(outcome)) return outcome.value
      yield* Scope.close(scope, outcome)
      const failure = outcome.cause
      const error = failure._tag === "Fail" ? failure.error : undefined
      if (error instanceof UpstreamFailed && failoverStatus(error.status)) {
        last = error
        continue
      }
      if (error instanceof NoAvailableAccount && last !== undefined) return yield* last
      return yield* Effect.failCause(failure)
    }
    return yield* (last ?? new NoAvailableAccount({ message: "No available account" }))
  })
