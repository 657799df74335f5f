/**
 * The HTTP upstream: one undici Agent (keep-alive pool per origin) for the whole process, driven
 * through undici's dispatch API. A handler of our own takes the answer as it comes, with no
 * Readable stream and no promise in between, and hands a stream's body over a pull at a time (all
 * reads since the last pull as one element). Kept on Effect 4 because it still measures cheaper
 * (client CPU per request, this handler against the same Upstream written on undici 8's `request()`
 * and on the platform's HttpClient over undici, 8 concurrent, interleaved runs of 2,500-4,000 on a
 * loaded 2-core machine, 3 sessions): JSON 180-230 µs against 196-346 µs (1.08-1.72x) and 591 µs
 * (3.3x); a 22-event SSE answer 316-411 µs against 431-599 µs (1.37-1.46x) and 620 µs (1.5x).
 *
 * A JSON request is answered whole: `send` ends when the last byte has come, so nothing is left
 * open for the request's scope to release. A stream request is answered at its headers; its body
 * is a Stream pulled from what undici delivers (every read since the last pull as one batch), and
 * closing the request's scope before the body ended aborts the upstream request.
 */
import { Cause, Effect, Redacted, Scope, Stream } from "effect"
import { isReadonlyArrayNonEmpty as isNonEmpty } from "effect/Array"
import type { Dispatcher } from "undici"
import { Agent } from "undici"
import type { SettingsShape } from "../../config/AppConfig.js"
import { UpstreamFailed } from "../../domain/errors.js"
import { openaiAccountHeaders } from "../../domain/forwardHeaders.js"
import type { Account } from "../../domain/model.js"
import { type UpstreamRequest, type UpstreamResponse, type UpstreamShape, wholeBody } from "./Upstream.js"

const ANTHROPIC_VERSION = "2023-06-01"

const ABORTED = new Error("The gateway stopped reading this upstream answer")
const DRAINED = new Error("The gateway is shutting down")
const TOO_LARGE = new Error("The upstream answer is larger than MAX_UPSTREAM_BODY_BYTES")

/** What is kept of an error answer: its message is in the first bytes. */
const ERROR_BODY_BYTES = 64 * 1024

/**
 * A transport failure as the catalogue's error. The three timeouts keep their own codes: failover
 * logs and metrics say which one fired, and an idle timeout mid-stream ends the client's stream with
 * a `response.failed` that says so.
 */
const transportError = (e: unknown): UpstreamFailed => {
  const code = (e as { code?: unknown })?.code
  if (e === TOO_LARGE) {
    return new UpstreamFailed({ status: 502, code: "upstream_body_too_large", message: `${TOO_LARGE.message}; it was not taken` })
  }
  if (e === DRAINED) {
    return new UpstreamFailed({ status: 0, code: "server_shutting_down", message: "The gateway is shutting down" })
  }
  const [ours, what] = code === "UND_ERR_CONNECT_TIMEOUT"
    ? ["upstream_connect_timeout", "timed out connecting"]
    : code === "UND_ERR_HEADERS_TIMEOUT"
    ? ["upstream_first_byte_timeout", "did not answer in time"]
    : code === "UND_ERR_BODY_TIMEOUT"
    ? ["upstream_idle_timeout", "went silent mid-answer"]
    : ["upstream_unreachable", "is unreachable"]
  // No account name: the message reaches the client; the failover log names the account.
  return new UpstreamFailed({ status: 0, code: ours, message: `The upstream ${what}` })
}

const flatHeaders = (h: Record<string, string | Array<string> | undefined>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const k in h) {
    const v = h[k]
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v
  }
  return out
}

/** Where an account's requests go and what they carry, worked out once per account. */
interface Target {
  readonly origin: string
  /** The base URL's path (e.g. `/v1`), before the request's own. */
  readonly prefix: string
  /** The account's credential and config headers: they win over anything a client sent. */
  readonly own: Record<string, string>
  /** Everything a request sends by default (content type, accept, API version), with `own`. */
  readonly jsonHeaders: Record<string, string>
  readonly streamHeaders: Record<string, string>
}

const targetOf = (account: Account): Target => {
  const url = new URL(account.baseUrl)
  const secret = account.secret === undefined ? undefined : Redacted.value(account.secret)
  // The account's credential, and what its config adds (OpenAI-Organization / OpenAI-Project).
  const bearer = account.platform === "openai" || account.platform === "openai_chat"
  const credential: Record<string, string> = secret === undefined ? {} : bearer ? { authorization: `Bearer ${secret}` } : { "x-api-key": secret }
  const own: Record<string, string> = { ...account.extraHeaders, ...openaiAccountHeaders(account), ...credential }
  // The API version is a default: a Messages client's own `anthropic-version` goes through as sent.
  const version: Record<string, string> = bearer ? {} : { "anthropic-version": ANTHROPIC_VERSION }
  return {
    origin: url.origin,
    prefix: url.pathname.replace(/\/+$/, ""),
    own,
    jsonHeaders: { "content-type": "application/json", accept: "application/json", ...version, ...own },
    streamHeaders: { "content-type": "application/json", accept: "text/event-stream", ...version, ...own }
  }
}


const noop = (): void => {}

/**
 * How much of a stream's body is held while nobody pulls (the client's socket is full) before the
 * upstream is paused: a slow client slows its own upstream instead of filling the gateway's memory.
 */
const HIGH_WATER_BYTES = 64 * 1024

type Batch = readonly [Uint8Array, ...Array<Uint8Array>]
type Pull = Effect.Effect<Batch, UpstreamFailed | Cause.Done>

const END: Pull = Cause.done()

/**
 * One upstream request and its answer. It hands the answer over once (`answer`): whole for a JSON
 * request, at the headers for a stream. A stream's body is pulled: a pull takes every read that
 * came since the last one as one batch, or waits for the next read.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private answer: (result: Effect.Effect<UpstreamResponse, UpstreamFailed>) => void = noop
  private controller: Dispatcher.DispatchController | undefined
  private status = 0
  private headers: Record<string, string> = {}
  private held: Array<Uint8Array> = []
  private heldBytes = 0
  private paused = false
  /** A pull waiting for the next read. */
  private waiting: ((pulled: Pull) => void) | undefined
  /** The body's end, once known: done, or how it failed. */
  private ending: "open" | "ended" | UpstreamFailed = "open"
  /** Nobody will read any more: what still comes is dropped and the request is aborted. */
  private abandoned = false
  private handedOver = false
  private unwatchDrain: () => void = noop

  constructor(
    private readonly stream: boolean,
    /** The largest JSON answer taken whole (a larger one fails, it is not buffered). */
    private readonly maxBodyBytes: number,
    private readonly onDrainDeadline: (callback: () => void) => () => void
  ) {}

  /** Sends the request; `answer` gets the answer (or the transport failure) once. */
  start(agent: Agent, target: Target, req: UpstreamRequest, answer: (result: Effect.Effect<UpstreamResponse, UpstreamFailed>) => void): void {
    this.answer = answer
    const own = req.stream ? target.streamHeaders : target.jsonHeaders
    agent.dispatch({
      origin: target.origin,
      path: `${target.prefix}${req.path}`,
      method: "POST",
      // The client's forwarded headers over the defaults, and the account's own (its credentials) over both.
      headers: req.headers === undefined ? own : { ...own, ...req.headers, ...target.own },
      body: req.body
    }, this)
  }

  /** Stops the upstream request if it is still running; nothing more is delivered. */
  abandon(): void {
    if (this.abandoned) return
    const open = this.ending === "open"
    this.abandoned = true
    this.unwatchDrain()
    this.held = []
    // Anyone still pulling hears that the body was cut, not that it ended well.
    if (open) this.ending = new UpstreamFailed({ status: 0, code: "upstream_unreachable", message: ABORTED.message })
    const waiting = this.waiting
    this.waiting = undefined
    if (waiting !== undefined && this.ending !== "open" && this.ending !== "ended") waiting(Effect.fail(this.ending))
    if (open) this.controller?.abort(ABORTED)
  }

  // -- undici's side --

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.abandoned) controller.abort(ABORTED)
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | Array<string> | undefined>
  ): void {
    if (statusCode < 200) return // an informational answer; the real one follows
    this.status = statusCode
    this.headers = flatHeaders(headers)
    if (!this.stream) return
    this.handOver(Effect.succeed(this.streamed()))
    // At the drain deadline a body still open ends (as a failure), so that a silent upstream does
    // not hold a client's stream, or the shutdown, open: the relay closes it as shutting down.
    this.unwatchDrain = this.onDrainDeadline(() => {
      if (this.ending === "open") this.controller?.abort(DRAINED)
    })
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.abandoned) return
    const waiting = this.waiting
    if (waiting !== undefined) {
      this.waiting = undefined
      return waiting(Effect.succeed([chunk]))
    }
    if (!this.stream && this.heldBytes + chunk.byteLength > this.bodyLimit()) {
      // An error answer keeps its first bytes (its message) and drops the rest as it comes; an
      // answer too large to take whole ends the request, unbuffered.
      if (this.status >= 300) return
      return controller.abort(TOO_LARGE)
    }
    this.held.push(chunk)
    this.heldBytes += chunk.byteLength
    if (this.stream && this.heldBytes > HIGH_WATER_BYTES && !this.paused) {
      this.paused = true
      controller.pause()
    }
  }

  onResponseEnd(): void {
    this.ending = "ended"
    this.unwatchDrain()
    if (!this.stream) return this.handOver(Effect.succeed(this.whole()))
    this.wake()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (this.abandoned) return
    const failure = transportError(error)
    this.ending = failure
    this.unwatchDrain()
    if (!this.handedOver) return this.handOver(Effect.fail(failure))
    this.wake()
  }

  /** How much of a JSON request's answer is kept: all of a success up to the limit, the start of an error. */
  private bodyLimit(): number {
    return this.status >= 300 ? ERROR_BODY_BYTES : this.maxBodyBytes
  }

  // -- the body, for the one who pulls it --

  /** The next reads as one batch; at the end, Cause.Done; on a transport failure, that failure. */
  private readonly pull: Pull = Effect.suspend(() => {
    if (isNonEmpty(this.held)) {
      const chunk: Batch = this.held
      this.held = []
      this.heldBytes = 0
      if (this.paused) {
        this.paused = false
        this.controller?.resume()
      }
      return Effect.succeed(chunk)
    }
    return this.ended() ?? Effect.callback<Batch, UpstreamFailed | Cause.Done>((resume) => {
      this.waiting = resume
      return Effect.sync(() => {
        this.waiting = undefined
      })
    })
  })

  private ended(): Pull | undefined {
    if (this.ending === "open") return undefined
    return this.ending === "ended" ? END : Effect.fail(this.ending)
  }

  /** The body ended or failed: a waiting pull hears it. */
  private wake(): void {
    const waiting = this.waiting
    const ended = this.ended()
    if (waiting === undefined || ended === undefined) return
    this.waiting = undefined
    waiting(ended)
  }

  private handOver(result: Effect.Effect<UpstreamResponse, UpstreamFailed>): void {
    if (this.handedOver) return
    this.handedOver = true
    this.answer(result)
  }

  private whole(): UpstreamResponse {
    const bytes = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held)
    this.held = []
    return { status: this.status, headers: this.headers, body: wholeBody(bytes) }
  }

  private streamed(): UpstreamResponse {
    return { status: this.status, headers: this.headers, body: Stream.fromPull(Effect.succeed(this.pull)) }
  }
}

/**
 * The HTTP upstream. `onDrainDeadline` (Lifecycle) says when stream bodies still open must end.
 */
export const makeHttpUpstream = (
  settings: SettingsShape,
  onDrainDeadline: (callback: () => void) => () => void = () => noop
) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new Agent({
        keepAliveTimeout: 30_000,
        connectTimeout: settings.upstreamConnectTimeoutMillis,
        // Time to first byte is the time to the response headers (both providers send them first).
        headersTimeout: settings.upstreamFirstByteTimeoutMillis,
        // undici's body timeout is the longest gap between two body chunks: our idle timeout.
        bodyTimeout: settings.upstreamIdleTimeoutMillis
      })
    ),
    (agent) => Effect.promise(() => agent.close())
  ).pipe(
    Effect.map((agent): UpstreamShape => {
      const targets = new WeakMap<Account, Target>()
      /** The account's target, or undefined when its base URL cannot be parsed (config allows `http://[x`). */
      const targetFor = (account: Account): Target | undefined => {
        let target = targets.get(account)
        if (target === undefined) {
          try {
            target = targetOf(account)
          } catch {
            return undefined
          }
          targets.set(account, target)
        }
        return target
      }

      return {
        send: (account, req) =>
          Effect.suspend(() => {
            const target = targetFor(account)
            if (target === undefined) {
              return Effect.fail(
                new UpstreamFailed({ status: 0, code: "upstream_unreachable", message: "The upstream is unreachable (the account's base_url is invalid)" })
              )
            }
            const exchange = new Exchange(req.stream, settings.maxUpstreamBodyBytes, onDrainDeadline)
            const call = Effect.callback<UpstreamResponse, UpstreamFailed>((resume) => {
              exchange.start(agent, target, req, resume)
              // A client that leaves before the answer came aborts the upstream request.
              return Effect.sync(() => exchange.abandon())
            })
            // A JSON answer is whole when `send` ends; a stream's body outlives it, until the
            // request's scope ends it (aborting it if it is still open).
            return req.stream
              ? Effect.andThen(Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, Effect.sync(() => exchange.abandon()))), call)
              : call
          })
      }
    })
  )

