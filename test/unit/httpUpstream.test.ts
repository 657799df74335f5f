/**
 * src/upstream/http.ts against a real socket: the HTTP upstream's contract as the rest of the gateway
 * relies on it. A JSON answer comes back whole (any status is a value, UTF-8 intact); a stream answer
 * comes back at its headers and its body reaches one listener in order, held until it listens, with
 * pause/resume reaching the socket; closing the request's scope or interrupting `send` aborts the
 * upstream request; transport failures are `UpstreamFailed` with status 0 and a code per cause.
 * Every test talks to a local `node:http` server, so undici's real parser, pool and timers are used.
 */
import { once } from "node:events"
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Fiber, Redacted, Scope, Stream } from "effect"
import { defaultSettings, type SettingsShape } from "../../src/config/AppConfig.js"
import { UpstreamFailed } from "../../src/domain/errors.js"
import type { Account, Platform } from "../../src/domain/model.js"
import { makeHttpUpstream } from "../../src/upstream/http.js"
import type { BodySource, UpstreamRequest, UpstreamResponse, UpstreamShape } from "../../src/upstream/Upstream.js"

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
  const upstream = Effect.runSync(Scope.extend(makeHttpUpstream(settings), scope))
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return { upstream }
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
  const response = await Effect.runPromise(Scope.extend(upstream.send(account, request), scope))
  return { response, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** A JSON send, whole, with its text. */
const sendJson = (upstream: UpstreamShape, account: Account, request: UpstreamRequest = jsonRequest()) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(upstream.send(account, request), (response) =>
    Effect.map(textOf(response), (text) => ({ response, text })))))

/** The failure `send` ends with (the test fails if it succeeds). */
const sendFailure = (upstream: UpstreamShape, account: Account, request: UpstreamRequest) =>
  Effect.runPromise(Effect.scoped(Effect.flip(upstream.send(account, request))))

const textOf = (response: UpstreamResponse): Effect.Effect<string, UpstreamFailed> => {
  if (response.text === undefined) throw new Error("the HTTP upstream's answer has no text")
  return response.text
}

const sourceOf = (response: UpstreamResponse): BodySource => {
  if (response.source === undefined) throw new Error("the HTTP upstream's stream answer has no source")
  return response.source
}

/** Listens to a body and records what reaches the listener; `onData` runs after each chunk is recorded. */
const record = (source: BodySource, onData: () => void = () => {}) => {
  const chunks: Array<Uint8Array> = []
  const state = { received: 0, ends: 0, failures: [] as Array<UpstreamFailed> }
  const settled = deferred<"end" | UpstreamFailed>()
  source.listen({
    data: (chunk) => {
      chunks.push(chunk)
      state.received += chunk.length
      onData()
    },
    end: () => {
      state.ends++
      settled.resolve("end")
    },
    error: (failure) => {
      state.failures.push(failure)
      settled.resolve(failure)
    }
  })
  return { state, settled: settled.promise, bytes: () => Buffer.concat(chunks) }
}

/** Records the body and pauses the source on the first chunk, as the SSE pump does when the client's socket is full. */
const recordPausingOnFirstChunk = (source: BodySource) => {
  const paused = { yes: false }
  const body = record(source, () => {
    if (paused.yes) return
    paused.yes = true
    source.pause()
  })
  return { ...body, paused: () => paused.yes }
}

const expectFailure = (outcome: "end" | UpstreamFailed, code: string) => {
  expect(outcome).toBeInstanceOf(UpstreamFailed)
  expect(outcome).toMatchObject({ status: 0, code })
}

/** An SSE frame, numbered so order and loss show. */
const frame = (i: number) => `event: response.output_text.delta\ndata: {"n":${i},"delta":"é${i}"}\n\n`

// -- the tests --

describe("HTTP upstream: JSON answers", () => {
  const server = serverForBlock()
  const up = upstreamForBlock(defaultSettings)

  it("comes back whole: status, flattened lower-case headers, headersAt, text and body Stream", async () => {
    const body = JSON.stringify({ id: "resp_1", output: [] })
    server.handle = (_req, res) => {
      res.setHeader("X-Request-Id", "req-42")
      res.setHeader("X-Multi", ["a", "b"])
      res.writeHead(201, { "Content-Type": "application/json" })
      res.end(body)
    }
    const before = Date.now()
    const { response, text } = await sendJson(up.upstream, accountOf(server.origin))
    expect(response.status).toBe(201)
    expect(response.headers["content-type"]).toBe("application/json")
    expect(response.headers["x-request-id"]).toBe("req-42")
    expect(response.headers["x-multi"]).toBe("a, b")
    expect(response.headersAt).toBeGreaterThanOrEqual(before)
    expect(response.headersAt).toBeLessThanOrEqual(Date.now())
    expect(text).toBe(body)
    // the Stream body, for callers that read it that way, carries the same bytes
    const chunks = await Effect.runPromise(Stream.runCollect(response.body))
    expect(Buffer.concat(Chunk.toArray(chunks)).toString("utf8")).toBe(body)
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
      expect(await Effect.runPromise(textOf(streamed.response))).toBe(frame(0))
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

  it("interrupting a pending send aborts the upstream request", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => arrived.resolve({ closed: closedEarly(res) }) // never answers
    const fiber = Effect.runFork(Effect.scoped(up.upstream.send(accountOf(server.origin), jsonRequest())))
    const { closed } = await within(arrived.promise, "the request to reach the server")
    const exit = await within(Effect.runPromise(Fiber.interrupt(fiber)), "the interrupted send to end")
    expect(Exit.isInterrupted(exit)).toBe(true)
    expect(await within(closed, "the server to see the request close")).toBe(true)
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
    expect(failure.message).toContain("acct-openai")
    // the timed-out request is not left running upstream
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
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

  it("answers at the headers; a late listener, then one after unlisten, get every byte in order, then end", async () => {
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
    release.resolve()
    await until(() => progress.written >= 4, "the server to write some frames")

    // the first listener comes late and leaves after its first chunk
    const source = sourceOf(response)
    const first = record(source, () => source.unlisten())
    await until(() => first.state.received > 0, "the first chunk")
    // what comes while nobody listens is held for the next listener, the end included
    await until(() => progress.ended, "the server to end")
    await sleep(50)
    const second = record(source)
    expect(await within(second.settled, "the body to end")).toBe("end")

    expect(Buffer.concat([first.bytes(), second.bytes()]).toString("utf8")).toBe(frames.join(""))
    expect(first.state.ends).toBe(0)
    expect(second.bytes().length).toBeGreaterThan(0)
    expect(second.state.ends).toBe(1)
    expect([...first.state.failures, ...second.state.failures]).toEqual([])
    await close()
  })

  it("pause() stops delivery and holds the upstream back; resume() delivers the rest intact", async () => {
    const chunkSize = 64 * 1024
    // 16 MiB: well beyond what the kernel buffers on loopback (about 4 MiB here), so the server blocks
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
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const source = sourceOf(response)
    const body = recordPausingOnFirstChunk(source)
    await until(body.paused, "the first chunk")

    // paused: nothing more reaches the listener, and the server cannot finish writing
    await sleep(300)
    const whilePaused = body.state.received
    await sleep(300)
    expect(body.state.received).toBe(whilePaused)
    expect(whilePaused).toBeLessThan(chunkSize * chunkCount)
    expect(progress.done).toBe(false)
    expect(progress.blocked).toBeGreaterThan(0)
    expect(body.state.ends).toBe(0)

    source.resume()
    expect(await within(body.settled, "the body to end after resume")).toBe("end")
    expect(progress.done).toBe(true)
    const expected = Buffer.concat(Array.from({ length: chunkCount }, (_, i) => chunkAt(i)))
    expect(body.state.received).toBe(expected.length)
    expect(body.bytes().equals(expected)).toBe(true)
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
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = record(sourceOf(response))
    await until(() => body.state.received > 0, "the first frames")
    const { closed } = await arrived.promise

    await close()
    expect(await within(closed, "the server to see the request close")).toBe(true)
    // nothing reaches the listener once the scope closed
    const atClose = body.state.received
    await sleep(50)
    expect(body.state.received).toBe(atClose)

    // the same upstream (same pool, same origin) still answers
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(`{"ok":true}`)
    }
    const next = await within(sendJson(up.upstream, accountOf(server.origin)), "the next request")
    expect(next.response.status).toBe(200)
    expect(next.text).toBe(`{"ok":true}`)
  })

  it("a stream request answered with an error status gives its body whole through text", async () => {
    const errorBody = JSON.stringify({ error: { type: "server_error", message: "boom" } })
    server.handle = (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" })
      res.write(errorBody.slice(0, 10))
      setTimeout(() => res.end(errorBody.slice(10)), 20)
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    expect(response.status).toBe(500)
    expect(response.headers["content-type"]).toBe("application/json")
    expect(await within(Effect.runPromise(textOf(response)), "the error body")).toBe(errorBody)
    await close()
  })

  it("a connection reset mid-stream reaches the listener as upstream_unreachable", async () => {
    server.handle = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0))
      setTimeout(() => res.socket?.destroy(), 50)
    }
    const { response, close } = await sendOpen(up.upstream, accountOf(server.origin), streamRequest())
    const body = record(sourceOf(response))
    expectFailure(await within(body.settled, "the reset to reach the listener"), "upstream_unreachable")
    expect(body.bytes().toString("utf8")).toBe(frame(0))
    expect(body.state.ends).toBe(0)
    expect(body.state.failures).toHaveLength(1)
    await close()
  })
})

describe("HTTP upstream: idle timeout", () => {
  const server = serverForBlock()
  const short = upstreamForBlock({ ...defaultSettings, upstreamIdleTimeoutMillis: 200 })

  it("an upstream silent mid-stream for longer than the idle timeout fails with upstream_idle_timeout", async () => {
    const arrived = deferred<{ readonly closed: Promise<boolean> }>()
    server.handle = (_req, res) => {
      arrived.resolve({ closed: closedEarly(res) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0)) // then silence
    }
    const { response, close } = await sendOpen(short.upstream, accountOf(server.origin), streamRequest())
    const body = record(sourceOf(response))
    expectFailure(await within(body.settled, "the idle timeout", 4_000), "upstream_idle_timeout")
    expect(body.bytes().toString("utf8")).toBe(frame(0))
    expect(await within((await arrived.promise).closed, "the server to see the request close")).toBe(true)
    await close()
  })

  it("a body paused by the gateway does not count as upstream silence", async () => {
    const more = deferred()
    server.handle = async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frame(0))
      await more.promise
      res.end(frame(1))
    }
    const { response, close } = await sendOpen(short.upstream, accountOf(server.origin), streamRequest())
    const source = sourceOf(response)
    const body = recordPausingOnFirstChunk(source)
    await until(() => body.state.received > 0, "the first frame")
    // paused far beyond the 200 ms idle timeout (undici checks it at up to ~1 s resolution)
    await sleep(1_300)
    expect(body.state.failures).toEqual([])
    more.resolve()
    await sleep(50)
    source.resume()
    expect(await within(body.settled, "the body to end")).toBe("end")
    expect(body.bytes().toString("utf8")).toBe(frame(0) + frame(1))
    await close()
  })
})
