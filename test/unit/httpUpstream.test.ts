/**
 * src/services/upstream/http.ts against a real socket: the HTTP upstream's contract as the rest of
 * the gateway relies on it. A JSON answer comes back whole (any status is a value, UTF-8 intact); a
 * stream answer comes back at its headers and its body is a pull-based Stream: every byte in order,
 * reads that came while nobody pulled handed over together, the upstream paused once a bounded
 * amount is held and resumed by the next pull. Closing the request's scope or interrupting `send`
 * aborts the upstream request; transport failures are `UpstreamFailed` with status 0 and a code per
 * cause, mid-body ones failing the body Stream; at the drain deadline, stream bodies still open end
 * (failed) and their upstream requests are aborted. Every test talks to a local `node:http` server, so
 * undici's real parser, pool and timers are used.
 */
import { once } from "node:events"
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Redacted, Scope, Stream } from "effect"
import { defaultSettings, type SettingsShape } from "../../src/config/AppConfig.js"
import { UpstreamFailed } from "../../src/domain/errors.js"
import type { Account, Platform } from "../../src/domain/model.js"
import { makeHttpUpstream } from "../../src/services/upstream/http.js"
import { readText, type UpstreamRequest, type UpstreamResponse, type UpstreamShape } from "../../src/services/upstream/Upstream.js"
import { DrainSignal } from "../../src/services/lifecycle/live.js"

// -- event-loop helpers --

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Waits until `check` holds, polling every 5 ms, for at most `ms`. */
const until = async (check: () => boolean, what: string, ms = 2_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

/** `promise`, or a failure naming `what` if it has not settled within `ms`. */
const within = <A>(promise: Promise<A>, what: string, ms = 2_000): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
    promise.then(
      (a) => {
        clearTimeout(timer)
        resolve(a)
      },
      (e: unknown) => {
        clearTimeout(timer)
        reject(e)
      }
    )
  })

const deferred = <A = void>() => {
  let resolve!: (a: A) => void
  const promise = new Promise<A>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

// -- the local upstream server --

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void

interface TestServer {
  readonly origin: string
  readonly seen: Array<Seen>
  /** How the next requests are answered (set per test). */
  handle: Handler
  readonly close: () => Promise<void>
}

/** A test server for the enclosing describe block: listening before its tests, closed after them. */
const serverForBlock = (): TestServer => {
  const server = createServer()
  const state: TestServer = {
    origin: "",
    seen: [],
    handle: (_req, res) => {
      res.writeHead(404).end()
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      state.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) })
      state.handle(req, res)
    })
  })
  beforeAll(async () => {
    server.listen(0, "127.0.0.1")
    await once(server, "listening")
    const { port } = server.address() as AddressInfo
    Object.assign(state, { origin: `http://127.0.0.1:${port}` })
  })
  afterAll(state.close)
  return state
}

/** Resolves when the answer's connection closes: true if it closed before the answer was complete. */
const closedEarly = (res: ServerResponse): Promise<boolean> =>
  new Promise((resolve) => res.once("close", () => resolve(!res.writableFinished)))

// -- the upstream under test --

/** The upstream under test, for the enclosing describe block (its agent closed after the block). */
const upstreamForBlock = (settings: SettingsShape) => {
  const scope = Effect.runSync(Scope.make())
  const upstream = Effect.runSync(Scope.provide(makeHttpUpstream(settings), scope))
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return { upstream }
}

/** An upstream of its own watching `signal` as its drain deadline (one-shot, so one per test); `close` closes its agent. */
const upstreamWithDrain = (signal: DrainSignal) => {
  const scope = Effect.runSync(Scope.make())
  const upstream = Effect.runSync(Scope.provide(makeHttpUpstream(defaultSettings, (callback) => signal.watch(callback)), scope))
  return { upstream, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** An HTTP account; `secret: null` for one without a secret. */
const accountOf = (baseUrl: string, platform: Platform = "openai", secret: string | null = "sk-secret"): Account => ({
  name: `acct-${platform}`,
  platform,
  kind: "http",
  baseUrl,
  secret: secret === null ? undefined : Redacted.make(secret),
  groups: [],
  priority: 0,
  concurrency: 10,
  modelMapping: undefined
})

const jsonRequest = (body = `{"model":"m","input":"hi"}`): UpstreamRequest => ({ path: "/responses", body, stream: false })
const streamRequest = (body = `{"model":"m","input":"hi","stream":true}`): UpstreamRequest => ({
  path: "/responses",
  body,
  stream: true
})

/** Sends on a scope of its own that stays open: the test closes it, as the end of a client request would. */
const sendOpen = async (upstream: UpstreamShape, account: Account, request: UpstreamRequest) => {
  const scope = Effect.runSync(Scope.make())
  const response = await within(Effect.runPromise(Scope.provide(upstream.send(account, request), scope)), "the answer", 5_000)
  return { response, scope, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** A JSON send, whole, with its text. */
const sendJson = (upstream: UpstreamShape, account: Account, request: UpstreamRequest = jsonRequest()) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(upstream.send(account, request), (response) =>
    Effect.map(readText(response), (text) => ({ response, text })))))

/** The failure `send` ends with (the test fails if it succeeds). */
const sendFailure = (upstream: UpstreamShape, account: Account, request: UpstreamRequest) =>
  Effect.runPromise(Effect.scoped(Effect.flip(upstream.send(account, request))))

/** What one pull of a body gives: a Chunk of reads, the end, or the failure the body ended with. */
type Pulled = { readonly chunk: ReadonlyArray<Uint8Array> } | "end" | UpstreamFailed

const bytesOf = (chunk: ReadonlyArray<Uint8Array>): Buffer => Buffer.concat(chunk)

/**
 * A consumer that pulls a body one pull at a time, when the test says so (as the platform pulls the
 * client's body only when the client's socket has room). Its pulls live on `scope`.
 */
const pullerOf = async (response: UpstreamResponse, scope: Scope.Scope) => {
  const pull = await Effect.runPromise(Scope.provide(Stream.toPull(response.body), scope))
  const next = (): Promise<Pulled> =>
    Effect.runPromise(
      pull.pipe(
        Effect.map((chunk): Pulled => ({ chunk })),
        Effect.catch((e) => Effect.succeed<Pulled>(Cause.isDone(e) ? "end" : e))
      )
    )
  /** Pulls until the body ends or fails: what came (one entry per pull), then how it ended. */
  const rest = async () => {
    const pulls: Array<ReadonlyArray<Uint8Array>> = []
    for (;;) {
      const pulled = await next()
      if (pulled === "end" || pulled instanceof UpstreamFailed) return { pulls, outcome: pulled }
      pulls.push(pulled.chunk)
    }
  }
  return { next, rest }
}

/** Runs a body Stream to its end, recording each element as it comes; the body's failure, if any. */
const consume = (body: Stream.Stream<Uint8Array, UpstreamFailed>, onElement: (bytes: Uint8Array) => void = () => {}) => {
  const elements: Array<Uint8Array> = []
  const done = Effect.runPromise(
    Stream.runForEach(body, (bytes) =>
      Effect.sync(() => {
        elements.push(bytes)
        onElement(bytes)
      })).pipe(
        Effect.as<"end" | UpstreamFailed>("end"),
        Effect.catch((failure) => Effect.succeed(failure))
      )
  )
  return { elements, done, text: () => Buffer.concat(elements).toString("utf8") }
}

const expectFailure = (outcome: unknown, code: string) => {
  expect(outcome).toBeInstanceOf(UpstreamFailed)
  expect(outcome).toMatchObject({ status: 0, code })
}

/** An SSE frame, numbered so order and loss show. */
const frame = (i: number) => `event: response.output_text.delta\ndata: {"n":${i},"delta":"é${i}"}\n\n`

/** The HTTP upstream's high water mark for a stream nobody pulls (http.ts, HIGH_WATER_BYTES). */
const HIGH_WATER = 64 * 1024

// -- the tests --

describe("HTTP upstream: JSON answers", () => {
  const server = serverForBlock()
  const up = upstreamForBlock(defaultSettings)

  it("comes back whole: status, flattened lower-case headers, and the body as one element", async () => {
    const body = JSON.stringify({ id: "resp_1", output: [] })
    server.handle = (_req, res) => {
      res.setHeader("X-Request-Id", "req-42")
      res.setHeader("X-Multi", ["a", "b"])
      res.writeHead(201, { "Content-Type": "application/json" })
      res.end(body)
    }
    const { response, text } = await sendJson(up.upstream, accountOf(server.origin))
    expect(response.status).toBe(201)
    expect(response.headers["content-type"]).toBe("application/json")
    expect(response.headers["x-request-id"]).toBe("req-42")
    expect(response.headers["x-multi"]).toBe("a, b")
    expect(text).toBe(body)
    // the body Stream is the whole answer in one element, and can be read again after the scope closed
    const chunks = await Effect.runPromise(Stream.runCollect(response.body))
    expect(chunks.length).toBe(1)
    expect(bytesOf(chunks).toString("utf8")).toBe(body)
  })

  it("send ends only once the last byte came, not at the headers", async () => {
    const release = deferred()
    const progress = { ended: false }
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write(`{"part":`)
      await release.promise
      res.end(`"two"}`)
      progress.ended = true
    }
    const fiber = Effect.runFork(Effect.scoped(Effect.flatMap(up.upstream.send(accountOf(server.origin), jsonRequest()), readText)))
    await sleep(150)
    // headers and the first half are in, yet send has not handed anything over
    expect(fiber.pollUnsafe()).toBeUndefined()
    release.resolve()
    const text = await within(Effect.runPromise(Fiber.join(fiber)), "the whole answer")
    expect(progress.ended).toBe(true)
    expect(text).toBe(`{"part":"two"}`)
  })

  it("decodes a multi-byte UTF-8 body split mid-character across two writes", async () => {
    const body = JSON.stringify({ text: "héllo – 日本" })
    const bytes = Buffer.from(body, "utf8")
    const cut = bytes.indexOf(Buffer.from("日", "utf8")) + 1 // inside the 3-byte character
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write(bytes.subarray(0, cut))
      setTimeout(() => res.end(bytes.subarray(cut)), 30)
    }
    const { response, text } = await sendJson(up.upstream, accountOf(server.origin))
    expect(response.status).toBe(200)
    expect(text).toBe(body)
    expect(JSON.parse(text)).toEqual({ text: "héllo – 日本" })
  })

  it("POSTs the body bytes unchanged to the base URL's path prefix + the request path", async () => {
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    }
    // odd spacing and non-ASCII: forwarded as given, not re-serialised
    const body = `{ "model":"m",  "input":"héllo – 日本" }`
    server.seen.length = 0
    await sendJson(up.upstream, accountOf(`${server.origin}/v1`), jsonRequest(body))
    await sendJson(up.upstream, accountOf(`${server.origin}/v1/`), { path: "/messages", body, stream: false })
    await sendJson(up.upstream, accountOf(server.origin), jsonRequest(body))
    expect(server.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      "POST /v1/responses",
      "POST /v1/messages",
      "POST /responses"
    ])
    for (const seen of server.seen) {
      expect(seen.body.equals(Buffer.from(body, "utf8"))).toBe(true)
      expect(seen.headers["content-type"]).toBe("application/json")
    }
  })

  it("returns a non-2xx answer as a value: 429 with retry-after and the error body", async () => {
    const errorBody = JSON.stringify({ error: { type: "rate_limit_exceeded", message: "slow down" } })
    server.handle = (_req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "7" }).end(errorBody)
    }
    const { response, text } = await sendJson(up.upstream, accountOf(server.origin))
    expect(response.status).toBe(429)
    expect(response.headers["retry-after"]).toBe("7")
    expect(text).toBe(errorBody)
  })

  it("sends each platform's credentials and the accept header for JSON and stream requests", async () => {
    server.handle = (req, res) => {
      if (req.headers.accept === "text/event-stream") {
        res.writeHead(200, { "content-type": "text/event-stream" }).end(frame(0))
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      }
    }
    const both = async (account: Account) => {
      server.seen.length = 0
      await sendJson(up.upstream, account)
      const streamed = await sendOpen(up.upstream, account, streamRequest())
      expect(await Effect.runPromise(readText(streamed.response))).toBe(frame(0))
      await streamed.close()
      expect(server.seen).toHaveLength(2)
      return server.seen.map((s) => s.headers)
    }

    const [openaiJson, openaiStream] = await both(accountOf(server.origin, "openai", "sk-openai"))
    expect(openaiJson).toMatchObject({ authorization: "Bearer sk-openai", accept: "application/json" })
    expect(openaiStream).toMatchObject({ authorization: "Bearer sk-openai", accept: "text/event-stream" })
    expect(openaiJson?.["x-api-key"]).toBeUndefined()
    expect(openaiJson?.["anthropic-version"]).toBeUndefined()

    const [anthropicJson, anthropicStream] = await both(accountOf(server.origin, "anthropic", "sk-ant"))
    for (const [headers, accept] of [[anthropicJson, "application/json"], [anthropicStream, "text/event-stream"]] as const) {
      expect(headers).toMatchObject({ "x-api-key": "sk-ant", "anthropic-version": "2023-06-01", accept })
      expect(headers?.authorization).toBeUndefined()
    }

    // an account without a secret sends no credential at all
    const [openaiBare] = await both(accountOf(server.origin, "openai", null))
    expect(openaiBare?.authorization).toBeUndefined()
    expect(openaiBare?.["x-api-key"]).toBeUndefined()
    const [anthropicBare] = await both(accountOf(server.origin, "anthropic", null))
    expect(anthropicBare?.["x-api-key"]).toBeUndefined()
    expect(anthropicBare?.authorization).toBeUndefined()
    expect(anthropicBare?.["anthropic-version"]).toBe("2023-06-01")
  })
})

describe("HTTP upstream: failures before the answer", () => {
  const server = serverForBlock()
  const up = upstreamForBlock(defaultSettings)
  const short = upstreamForBlock({ ...defaultSettings, upstreamFirstByteTimeoutMillis: 200 })

  it("interrupting a pending send aborts the upstream request (JSON and stream)", async () => {
    for (const request of [jsonRequest(), streamRequest()]) {
      const arrived = deferred<{ readonly closed: Promise<boolean> }>()
      server.handle = (_req, res) => arrived.resolve({ closed: closedEarly(res) }) // never answers
      const fiber = Effect.runFork(Effect.scoped(up.upstream.send(accountOf(server.origin), request)))
      const { closed } = await within(arrived.promise, "the request to reach the server")
      const exit = await within(Effect.runPromise(Effect.andThen(Fiber.interrupt(fiber), Fiber.await(fiber))), "the interrupted send to end")
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(await within(closed, "the server to see the request close")).toBe(true)
    }
  })

  it("no answer headers within the first-byte timeout fails with upstream_first_byte_timeout", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => arrived.resolve({ closed: closedEarly(res) }) // never answers
    const failure = await within(
      sendFailure(short.upstream, accountOf(server.origin), jsonRequest()),
      "the first-byte timeout",
      4_000
    )
    expect(failure).toBeInstanceOf(UpstreamFailed)
    expect(failure).toMatchObject({ status: 0, code: "upstream_first_byte_timeout" })
    // The message reaches clients: it names no internal account (the failover log does).
    expect(failure.message).not.toContain("acct-openai")
    // the timed-out request is not left running upstream
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
  })

  it("a JSON answer cut off mid-body fails send with upstream_unreachable", async () => {
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" })
      res.write(`{"half":`)
      setTimeout(() => res.socket?.destroy(), 30)
    }
    const failure = await within(sendFailure(up.upstream, accountOf(server.origin), jsonRequest()), "the reset")
    expect(failure).toBeInstanceOf(UpstreamFailed)
    expect(failure).toMatchObject({ status: 0, code: "upstream_unreachable" })
  })

  it("a refused connection fails with upstream_unreachable", async () => {
    const closed = createServer()
    closed.listen(0, "127.0.0.1")
    await once(closed, "listening")
    const { port } = closed.address() as AddressInfo
    await new Promise<void>((resolve) => closed.close(() => resolve()))

    const account = accountOf(`http://127.0.0.1:${port}/v1`, "openai", "sk-never-shown")
    for (const request of [jsonRequest(), streamRequest()]) {
      const failure = await within(sendFailure(up.upstream, account, request), "the refused connection")
      expect(failure).toBeInstanceOf(UpstreamFailed)
      expect(failure).toMatchObject({ status: 0, code: "upstream_unreachable" })
      expect(failure.message).not.toContain("sk-never-shown")
    }
  })

  it("a base URL the config let through but no URL parser takes fails as unreachable, not as a bug", async () => {
    const account = accountOf("http://[not-an-address/v1", "openai", "sk-never-shown")
    const failure = await within(sendFailure(up.upstream, account, jsonRequest()), "the invalid base URL")
    expect(failure).toBeInstanceOf(UpstreamFailed)
    expect(failure).toMatchObject({ status: 0, code: "upstream_unreachable" })
    expect(failure.message).toContain("base_url")
  })
})

describe("HTTP upstream: stream answers", () => {
  const server = serverForBlock()
  const up = upstreamForBlock(defaultSettings)

  it("a pull waiting when the request's scope closes ends as a cut (not a clean end), and so does one after", async () => {
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0))
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = consume(response.body)
    await until(() => body.elements.length > 0, "the first frame")
    await close()
    const outcome = await within(body.done, "the waiting pull to end", 1_000)
    expect(outcome).toBeInstanceOf(UpstreamFailed)
    expect(outcome).toMatchObject({ status: 0, code: "upstream_unreachable" })
    const late = consume(response.body)
    expect(await within(late.done, "a pull after the close to end", 1_000)).toBeInstanceOf(UpstreamFailed)
  })

  it("answers at the headers, before any body byte; the body gives every byte in order as it comes, then ends", async () => {
    const frames = Array.from({ length: 8 }, (_, i) => frame(i))
    const progress = { written: 0, ended: false }
    const release = deferred()
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.flushHeaders()
      await release.promise
      for (const f of frames) {
        res.write(f)
        progress.written++
        await sleep(10)
      }
      res.end()
      progress.ended = true
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    // send returned before a single body byte was written
    expect(progress.written).toBe(0)
    expect(response.status).toBe(200)
    expect(response.headers["content-type"]).toBe("text/event-stream")

    const writtenAtFirst: Array<number> = []
    const body = consume(response.body, () => writtenAtFirst.push(progress.written))
    release.resolve()
    expect(await within(body.done, "the body to end")).toBe("end")
    expect(progress.ended).toBe(true)
    expect(body.text()).toBe(frames.join(""))
    // the first bytes reached the consumer while the server was still writing
    expect(writtenAtFirst[0]).toBeLessThan(frames.length)
    await close()
  })

  it("reads that came while nobody pulled arrive together at the next pull, none lost, then the end", async () => {
    const frames = Array.from({ length: 6 }, (_, i) => frame(i))
    const progress = { ended: false }
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const f of frames) {
        res.write(f)
        await sleep(20) // one read each on the gateway's side
      }
      res.end()
      progress.ended = true
    }
    const { response, scope, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = await pullerOf(response, scope)
    await until(() => progress.ended, "the server to end", 4_000)
    await sleep(50)

    // one pull takes everything held: several reads in one Chunk, in order
    const first = await within(body.next(), "the first pull")
    if (first === "end" || first instanceof UpstreamFailed) throw new Error(`expected bytes, got ${String(first)}`)
    expect(first.chunk.length).toBeGreaterThan(1)
    expect(bytesOf(first.chunk).toString("utf8")).toBe(frames.join(""))
    // the end was held too
    expect(await within(body.next(), "the end")).toBe("end")
    await close()
  })

  it("a consumer that stops pulling stops the upstream being read once ~64 KiB are held; pulling again delivers the rest intact", async () => {
    const chunkSize = 64 * 1024
    // 16 MiB: well beyond what the kernel buffers on loopback (a few MiB), so the server blocks
    const chunkCount = 256
    const chunkAt = (i: number) => Buffer.alloc(chunkSize, 0x41 + (i % 26))
    const progress = { written: 0, blocked: 0, done: false }
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (let i = 0; i < chunkCount; i++) {
        progress.written += chunkSize
        if (!res.write(chunkAt(i))) {
          progress.blocked++
          await once(res, "drain")
        }
      }
      res.end()
      progress.done = true
    }
    const { response, scope, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = await pullerOf(response, scope)
    const first = await within(body.next(), "the first pull")
    if (first === "end" || first instanceof UpstreamFailed) throw new Error(`expected bytes, got ${String(first)}`)

    // nobody pulls: the server's writes stall and stay stalled
    await sleep(300)
    const stalledAt = progress.written
    await sleep(300)
    expect(progress.written).toBe(stalledAt)
    expect(progress.done).toBe(false)
    expect(progress.blocked).toBeGreaterThan(0)
    expect(stalledAt).toBeLessThan(chunkSize * chunkCount)

    // what the gateway held meanwhile: past the high water mark (it kept reading up to it), but
    // bounded (it stopped reading there): at most one read beyond it
    const held = await within(body.next(), "the pull after the stall")
    if (held === "end" || held instanceof UpstreamFailed) throw new Error(`expected bytes, got ${String(held)}`)
    const heldBytes = bytesOf(held.chunk).length
    expect(heldBytes).toBeGreaterThan(HIGH_WATER)
    expect(heldBytes).toBeLessThanOrEqual(2 * HIGH_WATER)

    // pulling again resumes the upstream: the rest comes, intact, and the body ends
    const { outcome, pulls } = await within(body.rest(), "the rest of the body", 10_000)
    expect(outcome).toBe("end")
    expect(progress.done).toBe(true)
    const received = Buffer.concat([bytesOf(first.chunk), bytesOf(held.chunk), ...pulls.map(bytesOf)])
    const expected = Buffer.concat(Array.from({ length: chunkCount }, (_, i) => chunkAt(i)))
    expect(received.length).toBe(expected.length)
    expect(received.equals(expected)).toBe(true)
    await close()
  })

  it("closing the request's scope before the body ended aborts the upstream; the pool keeps working", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      let i = 0
      const timer = setInterval(() => res.write(frame(i++)), 10) // never ends on its own
      res.once("close", () => clearInterval(timer))
    }
    const { response, scope, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = await pullerOf(response, scope)
    const first = await within(body.next(), "the first frames")
    expect(first).toHaveProperty("chunk")
    const { closed } = await arrived.promise

    await close()
    expect(await within(closed, "the server to see the request close")).toBe(true)

    // the same upstream (same pool, same origin) still answers, JSON and stream
    server.handle = (req, res) => {
      if (req.headers.accept === "text/event-stream") res.writeHead(200, { "content-type": "text/event-stream" }).end(frame(7))
      else res.writeHead(200, { "content-type": "application/json" }).end(`{"ok":true}`)
    }
    const next = await within(sendJson(up.upstream, accountOf(server.origin)), "the next request")
    expect(next.response.status).toBe(200)
    expect(next.text).toBe(`{"ok":true}`)
    const streamed = await within(sendOpen(up.upstream, accountOf(server.origin), streamRequest()), "the next stream")
    expect(await within(Effect.runPromise(readText(streamed.response)), "the next stream's body")).toBe(frame(7))
    await streamed.close()
  })

  it("closing the scope of a consumer that stopped pulling (upstream paused) still aborts the upstream", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      const write = () => {
        while (res.write(Buffer.alloc(64 * 1024, 0x61)));
        res.once("drain", write)
      }
      write()
    }
    const { response, scope, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = await pullerOf(response, scope)
    expect(await within(body.next(), "the first read")).toHaveProperty("chunk")
    await sleep(200) // held past the high water mark: paused
    const { closed } = await arrived.promise
    await close()
    expect(await within(closed, "the server to see the request close")).toBe(true)
  })

  it("a stream request answered with an error status gives its body whole through readText", async () => {
    const errorBody = JSON.stringify({ error: { type: "server_error", message: "boom" } })
    server.handle = (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" })
      res.write(errorBody.slice(0, 10))
      setTimeout(() => res.end(errorBody.slice(10)), 20)
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    expect(response.status).toBe(500)
    expect(response.headers["content-type"]).toBe("application/json")
    expect(await within(Effect.runPromise(readText(response)), "the error body")).toBe(errorBody)
    await close()
  })

  it("a connection reset mid-stream fails the body with upstream_unreachable, after the bytes before it", async () => {
    for (const consumer of ["pulling", "late"] as const) {
      const reset = deferred()
      server.handle = (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(frame(0))
        setTimeout(() => {
          res.socket?.destroy()
          reset.resolve()
        }, 50)
      }
      const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
      // a consumer already waiting for the next read, or one that comes after the reset
      if (consumer === "late") {
        await reset.promise
        await sleep(50)
      }
      const body = consume(response.body)
      expectFailure(await within(body.done, `the reset to reach the ${consumer} consumer`), "upstream_unreachable")
      expect(body.text()).toBe(frame(0))
      await close()
    }
  })
})

describe("HTTP upstream: idle timeout", () => {
  const server = serverForBlock()
  const short = upstreamForBlock({ ...defaultSettings, upstreamIdleTimeoutMillis: 200 })

  it("an upstream silent mid-stream for longer than the idle timeout fails the body with upstream_idle_timeout", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0)) // then silence
    }
    const { response, close } = await sendOpen(short.upstream, accountOf(server.origin), streamRequest())
    const body = consume(response.body)
    expectFailure(await within(body.done, "the idle timeout", 4_000), "upstream_idle_timeout")
    expect(body.text()).toBe(frame(0))
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
    await close()
  })

  it("a body the gateway stopped pulling (held above high water, paused) does not count as upstream silence", async () => {
    const more = deferred()
    const burst = Buffer.alloc(4 * HIGH_WATER, 0x62) // enough to be held past the high water mark
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(burst)
      await more.promise
      res.end(frame(1))
    }
    const { response, scope, close } = await sendOpen(short.upstream, accountOf(server.origin), streamRequest())
    const body = await pullerOf(response, scope)
    const first = await within(body.next(), "the first read")
    if (first === "end" || first instanceof UpstreamFailed) throw new Error(`expected bytes, got ${String(first)}`)
    // nobody pulls, far beyond the 200 ms idle timeout (undici checks it at up to ~1 s resolution)
    await sleep(1_300)
    more.resolve()
    await sleep(50)
    const { outcome, pulls } = await within(body.rest(), "the rest of the body")
    expect(outcome).toBe("end")
    const received = Buffer.concat([bytesOf(first.chunk), ...pulls.map(bytesOf)])
    expect(received.equals(Buffer.concat([burst, Buffer.from(frame(1), "utf8")]))).toBe(true)
    await close()
  })
})

describe("HTTP upstream: drain deadline", () => {
  const server = serverForBlock()

  it("a stream body still open at the deadline (a silent upstream) fails at once and the upstream request is aborted", async () => {
    const signal = new DrainSignal()
    const up = upstreamWithDrain(signal)
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0)) // then silence, far below any timeout
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = consume(response.body)
    await until(() => body.elements.length > 0, "the first frame")
    expect(signal.watchers).toBe(1)
    signal.fire()
    const outcome = await within(body.done, "the body to end at the deadline")
    expect(outcome).toBeInstanceOf(UpstreamFailed)
    expect(outcome).toMatchObject({ status: 0, code: "server_shutting_down" })
    expect(body.text()).toBe(frame(0))
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
    await close()
    await up.close()
  })

  it("a stream answered after the deadline passed ends its body at once", async () => {
    const signal = new DrainSignal()
    signal.fire()
    const up = upstreamWithDrain(signal)
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0)) // then silence
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = consume(response.body)
    expect(await within(body.done, "the body to end")).toBeInstanceOf(UpstreamFailed)
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
    await close()
    await up.close()
  })

  it("a stream body stops watching the deadline once it ended, failed or was closed; a JSON request never watches", async () => {
    const signal = new DrainSignal()
    const up = upstreamWithDrain(signal)
    const account = accountOf(server.origin)
    const release = deferred()
    server.handle = async (req, res) => {
      if (req.headers.accept !== "text/event-stream") {
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
        return
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0))
      if (req.url === "/responses/ends") {
        await release.promise
        res.end(frame(1))
      } else if (req.url === "/responses/resets") {
        await release.promise
        res.socket?.destroy()
      } // otherwise it stays open until the scope closes
    }
    const ends = await sendOpen(up.upstream, account, { ...streamRequest(), path: "/responses/ends" })
    const resets = await sendOpen(up.upstream, account, { ...streamRequest(), path: "/responses/resets" })
    const closes = await sendOpen(up.upstream, account, streamRequest())
    expect(signal.watchers).toBe(3)
    await sendJson(up.upstream, account)
    expect(signal.watchers).toBe(3)

    release.resolve()
    expect(await within(Effect.runPromise(readText(ends.response)), "the body to end")).toBe(frame(0) + frame(1))
    expect(await within(consume(resets.response.body).done, "the reset")).toBeInstanceOf(UpstreamFailed)
    expect(signal.watchers).toBe(1)
    await closes.close()
    expect(signal.watchers).toBe(0)
    await ends.close()
    await resets.close()
    await up.close()
  })
})

/** Until `res` drains or closes; the listener that did not fire goes too (one per write would pile up). */
const drainedOrClosed = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done).off("close", done)
      resolve()
    }
    res.once("drain", done).once("close", done)
  })

describe("HTTP upstream: bounded bodies (issue 16, item 5)", () => {
  const server = serverForBlock()
  const up = upstreamForBlock({ ...defaultSettings, maxUpstreamBodyBytes: 1024 * 1024 })

  it("a JSON answer larger than MAX_UPSTREAM_BODY_BYTES fails with 502 upstream_body_too_large, and the request is cut", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    const chunk = Buffer.alloc(64 * 1024, "x")
    server.handle = async (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "application/json" })
      // 8 MB offered, far past the 1 MB limit; stops writing once the gateway hangs up.
      for (let i = 0; i < 128 && !res.destroyed; i++) {
        if (!res.write(chunk)) await drainedOrClosed(res)
      }
      res.end()
    }
    const failure = await within(sendFailure(up.upstream, accountOf(server.origin), jsonRequest()), "the too-large answer to fail")
    expect(failure).toBeInstanceOf(UpstreamFailed)
    expect(failure).toMatchObject({ status: 502, code: "upstream_body_too_large" })
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
  })

  it("an error answer keeps its first 64 KiB (its message) and drops the rest, for JSON and stream requests", async () => {
    const message = JSON.stringify({ error: { message: "quota exceeded", type: "server_error" } })
    const padding = "y".repeat(5 * 1024 * 1024)
    server.handle = (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(message + padding)
    }
    const { response, text } = await sendJson(up.upstream, accountOf(server.origin))
    expect(response.status).toBe(500)
    expect(text.startsWith(message)).toBe(true)
    expect(text.length).toBeLessThanOrEqual(64 * 1024)

    const streamed = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const limited = await Effect.runPromise(readText(streamed.response, 64 * 1024))
    expect(limited.startsWith(message)).toBe(true)
    expect(limited.length).toBe(64 * 1024)
    await streamed.close()
  })
})
