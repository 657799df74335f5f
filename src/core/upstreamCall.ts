/**
 * Calling upstream with failover: pick an account, send, and if the account failed in a way another
 * account may not (the Scheduler's failover policy decides; by default 401, a 403 that refused the
 * credential, 429/529/5xx, connect errors, first-byte timeouts, up to the configured number of
 * switches), report it, let it go and try the next, while nothing has reached the client.
 * Each attempt's account slot belongs to the request's scope; a failed attempt gives its slot back
 * at once (the ticket's `release`), and the winning attempt's slot lives as long as the request.
 *
 * When every account is busy the pick returns a place in a queue. A stream request may then answer
 * at once with an SSE response and wait inside it (keep-alives while it waits): the call returns
 * `Waiting` with the rest of the work for the stream to run. Nothing waits when a slot is free.
 */
import { Clock, Data, Effect, Redacted, Result, Scope, type Tracer } from "effect"
import {
  type GatewayError,
  type NoAvailableAccount,
  type RateLimited,
  type StoreError,
  UPSTREAM_AUTH_FAILED,
  UpstreamFailed,
  upstreamRefusedRequest
} from "../domain/errors.js"
import type { Account, Principal } from "../domain/model.js"
import { redactSecrets } from "../domain/redact.js"
import { isEventStream } from "../domain/sse.js"
import { decodeUpstreamError, parseUpstreamJson } from "../domain/upstreamJson.js"
import { observeUpstreamFirstByte } from "../observability/metrics.js"
import { type AccountTicket, Scheduler, type UpstreamOutcome } from "../services/scheduler/Scheduler.js"
import { countFailover } from "../observability/schedulerMetrics.js"
import { retryAfterMillis } from "../domain/rateLimitReset.js"
import { credentialRefused } from "../domain/credential.js"
import { readText, Upstream, type UpstreamRequest, type UpstreamResponse } from "../services/upstream/Upstream.js"
import { attemptAttributes, traced, traceparentOf } from "../observability/tracing.js"
import type { Attempt } from "./turnFacts.js"

const ERROR_BODY_LIMIT = 64 * 1024

const NOT_AN_EVENT_STREAM = "Upstream answered a stream request with something other than text/event-stream"

const retryAfterOf = (headers: Readonly<Record<string, string>>, now: number): number | undefined => {
  const ms = retryAfterMillis(headers, now)
  return ms === undefined ? undefined : Math.ceil(ms / 1000)
}

/**
 * What the client sees when an upstream refused: its own words for request problems (a 403 for a
 * model or feature the credential may not use among them), ours otherwise; a refused credential
 * (401, or a 403 that says so: domain/credential.ts) is `upstream_auth_failed`.
 * `now` (epoch millis, from the caller's Clock) reads a retry-after given as a date.
 */
export const upstreamError = (
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string,
  secrets: ReadonlyArray<string>,
  now: number
): UpstreamFailed => {
  const decoded = decodeUpstreamError(body)
  const code = decoded.code
  // The upstream's own words, less any credential it echoed (the account's key above all).
  const message = decoded.message === undefined ? undefined : redactSecrets(decoded.message, secrets)
  const retryAfterSeconds = retryAfterOf(headers, now)
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
  if (status === 401 || (status === 403 && credentialRefused(decoded))) {
    return new UpstreamFailed({ status, code: UPSTREAM_AUTH_FAILED, message: "Upstream authentication failed" })
  }
  if (status === 403) {
    return new UpstreamFailed({
      status,
      code: code ?? "upstream_permission_denied",
      message: message ?? "Upstream denied the request (HTTP 403)"
    })
  }
  if (status === 529) return new UpstreamFailed({ status, code: "upstream_overloaded", message: "Upstream is overloaded" })
  return new UpstreamFailed({ status, code: "upstream_error", message: `Upstream request failed (HTTP ${status})` })
}

/**
 * The upstream's own words in an error body, less any credential, for the scheduler (a take-out
 * keeps them for the operator): the decoded message, else the start of a body that is not JSON.
 */
const upstreamWords = (body: string, secrets: ReadonlyArray<string>): string | undefined => {
  const message = decodeUpstreamError(body).message ?? body.replace(/\s+/g, " ").trim().slice(0, 300)
  return message === "" ? undefined : redactSecrets(message, secrets)
}

/** The account's credential, to keep out of what the client reads. */
const secretsOf = (account: Account): ReadonlyArray<string> =>
  account.secret === undefined ? [] : [Redacted.value(account.secret)]

/** An error answer is small; a hostile one is cut off rather than buffered whole. */
const readLimited = (response: UpstreamResponse) =>
  readText(response, ERROR_BODY_LIMIT).pipe(Effect.orElseSucceed(() => ""))

export interface Answer {
  readonly account: Account
  readonly response: UpstreamResponse
  /** A JSON answer, read whole and parsed during the attempt (a stream answer has none). */
  readonly json?: { readonly text: string; readonly body: Record<string, unknown> }
  /** Every attempt of the call, in order: the last is this answer's. */
  readonly attempts: ReadonlyArray<Attempt>
}

export interface CallInput {
  readonly requestId: string
  readonly principal: Principal
  readonly model: string
  readonly session: string | undefined
  readonly build: (account: Account) => UpstreamRequest
  /** The request's span when tracing is on: scheduling and each attempt are its children. */
  readonly span: Tracer.Span | undefined
  /**
   * Whether the attempts' outcomes tell the Scheduler of the account's health (default true). False
   * for an endpoint whose limits are its own (count_tokens): its 429 must not cool the account
   * down for real traffic, nor its success clear the account's failures.
   */
  readonly reportsHealth?: boolean
}

export type CallError = NoAvailableAccount | RateLimited | UpstreamFailed | StoreError

/** A call that got no answer: why, and the attempts it made (none when no account was picked). */
export class CallFailed extends Data.TaggedError("CallFailed")<{
  readonly error: CallError
  readonly attempts: ReadonlyArray<Attempt>
}> {}

/**
 * The upstream's answer, or the wait for it: every account (or, for the admitted turn, the key's
 * slot) was busy, and `resume` waits for the slot and finishes the call, failover included. The
 * call fails with `CallFailed`; the admitted turn hands its door a `TurnAnswer` failing with the
 * client's error.
 */
export type TurnAnswer<E = GatewayError> =
  | { readonly _tag: "Answered"; readonly answer: Answer }
  | { readonly _tag: "Waiting"; readonly resume: Effect.Effect<Answer, E> }

/** The answer at hand, or after the wait handed back. */
export const answerOf = <E>(answer: TurnAnswer<E>): Effect.Effect<Answer, E> =>
  answer._tag === "Answered" ? Effect.succeed(answer.answer) : answer.resume

/**
 * Calls upstream for a request, holding what it takes (the account slot, a stream's body) in the
 * request's Scope; `mayWait` lets it hand back the waiting instead of doing it.
 */
export type UpstreamCaller = (input: CallInput, mayWait: boolean) => Effect.Effect<TurnAnswer<CallFailed>, CallFailed, Scope.Scope>

const SUCCESS: UpstreamOutcome = { _tag: "Success" }

/** One call's accounts tried so far and its attempts, in order (the call's own, never shared). */
interface CallState {
  readonly tried: Set<string>
  readonly attempts: Array<Attempt>
  /** The first account that refused this call's credential, if one did (see `defaultFailover`). */
  refusedBy?: string
}

/** Whether an attempt on `account` follows another account's refusal of this call's credential. */
const refusedBefore = (state: CallState, account: Account): boolean =>
  state.refusedBy !== undefined && state.refusedBy !== account.name

/** The caller, with its services resolved once, so a stream body can run it (it needs nothing). */
export const makeUpstreamCaller = Effect.gen(function*() {
  const scheduler = yield* Scheduler
  const upstream = yield* Upstream

  /**
   * One attempt on a held account slot (its answer is kept by the Scope in context); a failure is
   * reported to the scheduler first.
   */
  const send = (input: CallInput, state: CallState, account: Account): Effect.Effect<Answer, UpstreamFailed, Scope.Scope> => {
    const parent = input.span
    if (parent === undefined) return Effect.suspend(() => sendRequest(input, state, account, input.build(account)))
    // Tracing: the attempt is a span of its own, and the upstream hears of it as its parent.
    return Effect.useSpan(
      "gateway.upstream_attempt",
      { parent, kind: "client", attributes: attemptAttributes(account, input.model) },
      (span) => {
        const request = input.build(account)
        const headers = { ...request.headers, traceparent: traceparentOf(span) }
        return sendRequest(input, state, account, { ...request, headers }).pipe(
          Effect.ensuring(Effect.sync(() => {
            const status = state.attempts.at(-1)?.status
            if (status !== undefined) span.attribute("http.response.status_code", status)
          }))
        )
      }
    )
  }

  /** One request to the account: its answer, or the failure reported to the scheduler first. */
  const sendRequest = Effect.fnUntraced(function*(input: CallInput, state: CallState, account: Account, request: UpstreamRequest) {
    const started = yield* Clock.currentTimeMillis
    const report = (outcome: UpstreamOutcome) =>
      input.reportsHealth === false ? Effect.void : scheduler.report(account, outcome, input.session)
    /** The time to the answer's headers (or to the failure): for the metric and the attempt. */
    const noted = (status: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => {
        state.attempts.push({ account: account.name, status, latencyMs: at - started })
        return Effect.as(observeUpstreamFirstByte(at - started), at)
      })
    const failed = (status: number, headers: Readonly<Record<string, string>>, error: UpstreamFailed) =>
      Effect.andThen(report({ _tag: "Failure", status, headers, code: error.code }), Effect.fail(error))

    const sent = yield* Effect.catch(upstream.send(account, request), (e) =>
      noted(e.status).pipe(
        Effect.andThen(report({ _tag: "Failure", status: e.status, headers: {}, code: e.code })),
        Effect.andThen(Effect.fail(e))
      ))
    const at = yield* noted(sent.status)
    if (sent.status >= 200 && sent.status < 300) {
      // The call's own list: no attempt follows an answer.
      const attempts = state.attempts
      if (request.stream) {
        // A stream answer is relayed as it comes: one that is no event stream (an HTML or JSON page
        // under a 200) fails this attempt like a 5xx, before a byte of it is relayed.
        if (!isEventStream(sent.headers["content-type"])) {
          return yield* failed(502, sent.headers, new UpstreamFailed({ status: 502, code: "upstream_invalid_response", message: NOT_AN_EVENT_STREAM }))
        }
        yield* report(SUCCESS)
        const answer: Answer = { account, response: sent, attempts }
        return answer
      }
      // A JSON answer is read here, so that one that is not JSON (an HTML error page, a cut body)
      // fails this attempt and moves on to the next account, like a 5xx.
      const text = yield* readText(sent)
      const parsed = parseUpstreamJson(text)
      if (Result.isFailure(parsed)) {
        return yield* failed(502, sent.headers, new UpstreamFailed({ status: 502, code: "upstream_invalid_response", message: parsed.failure }))
      }
      yield* report(SUCCESS)
      const answer: Answer = { account, response: sent, json: { text, body: parsed.success }, attempts }
      return answer
    }
    const body = yield* readLimited(sent)
    const secrets = secretsOf(account)
    const error = upstreamError(sent.status, sent.headers, body, secrets, at)
    const credentialRefusedBefore = refusedBefore(state, account)
    if (error.code === UPSTREAM_AUTH_FAILED && state.refusedBy === undefined) state.refusedBy = account.name
    // The error's code tells the scheduler whether a 403 refused the credential or the request; a
    // refusal after another account's is the scheduler's to weigh (verdict.ts).
    yield* report({
      _tag: "Failure",
      status: sent.status,
      headers: sent.headers,
      code: error.code,
      detail: upstreamWords(body, secrets),
      credentialRefusedBefore
    })
    return yield* Effect.fail(error)
  })

  const answered = (answer: Answer): TurnAnswer<CallFailed> => ({ _tag: "Answered", answer })

  /** After a failed attempt: the next account, or the error when it is not worth another. */
  const afterFailure = (
    input: CallInput,
    state: CallState,
    attempt: number,
    account: Account,
    error: CallError,
    mayWait: boolean
  ): Effect.Effect<TurnAnswer<CallFailed>, CallError, Scope.Scope> => {
    if (!(error instanceof UpstreamFailed)) return Effect.fail(error)
    // The Scheduler's policy decides whether another account is worth it (and how many switches).
    const failure = { status: error.status, code: error.code, credentialRefusedBefore: refusedBefore(state, account) }
    return Effect.flatMap(scheduler.failover(failure, attempt + 1), (decision) => {
      const { reason } = decision
      // Not a failure another account could help with: no failover to speak of.
      if (reason === undefined) return Effect.fail(error)
      const log = {
        request_id: input.requestId,
        account: account.name,
        status: error.status,
        code: error.code,
        reason,
        attempt: attempt + 1
      }
      if (decision._tag === "Stop") {
        return Effect.logWarning("upstream failed; no switches left").pipe(Effect.annotateLogs(log), Effect.andThen(Effect.fail(error)))
      }
      return Effect.logWarning("upstream failover: trying another account").pipe(
        Effect.annotateLogs(log),
        Effect.andThen(countFailover(reason)),
        Effect.andThen(attemptFrom(input, state, attempt + 1, error, mayWait))
      )
    })
  }

  /**
   * One attempt: pick an account and call it. The slot (or the place in its queue) is the request
   * scope's; a failed attempt gives it back at once, before the next attempt picks.
   */
  const attemptFrom = (
    input: CallInput,
    state: CallState,
    attempt: number,
    last: UpstreamFailed | undefined,
    mayWait: boolean
  ): Effect.Effect<TurnAnswer<CallFailed>, CallError, Scope.Scope> => {
    let ticket: AccountTicket | undefined
    const failed = (canWait: boolean) => (e: CallError): Effect.Effect<TurnAnswer<CallFailed>, CallError, Scope.Scope> => {
      // Out of accounts after a failure: the client hears what the upstream said, not "no account".
      if (ticket === undefined && e._tag === "NoAvailableAccount" && last !== undefined) {
        const log = { request_id: input.requestId, status: last.status, code: last.code, attempt }
        return Effect.logWarning("upstream failed; no other account").pipe(Effect.annotateLogs(log), Effect.andThen(Effect.fail(last)))
      }
      if (ticket === undefined) return Effect.fail(e)
      return Effect.andThen(ticket.release, afterFailure(input, state, attempt, ticket.account, e, canWait))
    }
    const pick = traced(input.span, "gateway.scheduling", scheduler.acquireAccount({
      group: input.principal.group,
      model: input.model,
      session: input.session,
      exclude: state.tried
    }))
    const step = Effect.flatMap(pick, (t): Effect.Effect<TurnAnswer<CallFailed>, CallError, Scope.Scope> => {
      ticket = t
      state.tried.add(t.account.name)
      if (t._tag === "Granted") return Effect.map(send(input, state, t.account), answered)
      const waitThenSend = Effect.andThen(t.wait, send(input, state, t.account))
      if (!mayWait) return Effect.map(waitThenSend, answered)
      // The wait runs later, where the caller decides (inside an SSE response), still holding what
      // it takes in the request's scope.
      return Effect.map(Effect.scope, (scope): TurnAnswer<CallFailed> => ({
        _tag: "Waiting",
        resume: Effect.map(waitThenSend, answered).pipe(
          Effect.catch(failed(false)),
          Effect.flatMap((step) => step._tag === "Answered" ? Effect.succeed(step.answer) : Effect.mapError(step.resume, (f) => f.error)),
          Effect.mapError((error) => new CallFailed({ error, attempts: state.attempts })),
          Effect.provideService(Scope.Scope, scope)
        )
      }))
    })
    return Effect.catch(step, failed(mayWait))
  }

  const call: UpstreamCaller = (input, mayWait) => {
    const state: CallState = { tried: new Set(), attempts: [] }
    return Effect.mapError(
      attemptFrom(input, state, 0, undefined, mayWait),
      (error) => new CallFailed({ error, attempts: state.attempts })
    )
  }
  return call
})
