/**
 * Helpers for the gateway core tests: HTTP calls as a client makes them (fetch, or node:http when
 * fetch cannot express the request), the error-envelope assertion, and an SSE reader.
 */
import { request as httpRequest } from "node:http"
import { expect } from "@effect/vitest"
import { assertOpenResponses, bodyIssues, eventIssues, SchemaViolation } from "../support/openResponses.js"

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown
}

const parseOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

export interface CallOptions {
  readonly method?: string
  /** Sent as `Authorization: Bearer <key>`. */
  readonly key?: string
  readonly headers?: Record<string, string>
  /** An object is JSON-encoded; a string is sent as it is. */
  readonly body?: unknown
}

export const call = async (base: string, path: string, options: CallOptions = {}): Promise<Answer> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.key !== undefined) headers["authorization"] = `Bearer ${options.key}`
  let body: string | undefined
  if (options.body !== undefined) {
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body)
    headers["content-type"] ??= "application/json"
  }
  const res = await fetch(`${base}${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body === undefined ? {} : { body })
  })
  const text = await res.text()
  const json = parseOrUndefined(text)
  if (isResponsesDoor(path)) assertOpenResponses(bodyIssues(json), `the body of ${path}`)
  return { status: res.status, headers: res.headers, text, json }
}

/** A path of the Responses door (under any subpath), whose bodies and events the spec covers. */
const isResponsesDoor = (path: string): boolean => /\/responses(\/compact)?(\?|$)/.test(new URL(path, "http://x").pathname + "?")

/** POST a Responses body with a key. */
export const postResponses = (base: string, key: string, body: unknown, path = "/v1/responses") =>
  call(base, path, { key, body })

/**
 * The envelope exactly: `{"error":{"type","message","code","param"}}` and nothing else, with the
 * given status, type and code, an `x-request-id`, and (when given) the exact message.
 */
export const expectEnvelope = (
  answer: Answer,
  expected: { status: number; type: string; code: string; message?: string | RegExp; param?: string | null }
): { type: string; message: string; code: string; param: string | null } => {
  expect({ status: answer.status, body: answer.text }).toMatchObject({ status: expected.status })
  expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
  expect(answer.headers.get("x-request-id")).toMatch(/\S{8,}/)
  const body = answer.json as { error: Record<string, unknown> }
  expect(Object.keys(body)).toEqual(["error"])
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"])
  expect(body.error["type"]).toBe(expected.type)
  expect(body.error["code"]).toBe(expected.code)
  expect(typeof body.error["message"]).toBe("string")
  expect(body.error["param"] === null || typeof body.error["param"] === "string").toBe(true)
  if (typeof expected.message === "string") expect(body.error["message"]).toBe(expected.message)
  else if (expected.message instanceof RegExp) expect(body.error["message"]).toMatch(expected.message)
  if (expected.param !== undefined) expect(body.error["param"]).toBe(expected.param)
  return body.error as { type: string; message: string; code: string; param: string | null }
}

export interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly elapsedMs: number
}

/**
 * A request through node:http, for what fetch refuses to send (Upgrade headers) or to control how
 * the body goes out: `chunks` are written one by one with `gapMs` between them and no
 * content-length (chunked transfer encoding). Rejects on a socket error, so a reset fails the test.
 */
export const rawRequest = (
  base: string,
  path: string,
  options: {
    readonly method: string
    readonly headers?: Record<string, string>
    readonly body?: string
    readonly chunks?: ReadonlyArray<string>
    readonly gapMs?: number
  }
): Promise<RawAnswer> =>
  new Promise((resolve, reject) => {
    const started = Date.now()
    const req = httpRequest(`${base}${path}`, { method: options.method, headers: options.headers ?? {}, agent: false }, (res) => {
      const parts: Array<Buffer> = []
      res.on("data", (c: Buffer) => parts.push(c))
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(parts).toString("utf8"),
          elapsedMs: Date.now() - started
        }))
      res.on("error", reject)
    })
    req.on("error", reject)
    if (options.chunks !== undefined) {
      const chunks = [...options.chunks]
      const next = (): void => {
        const chunk = chunks.shift()
        if (chunk === undefined) {
          req.end()
          return
        }
        // The server may answer (413) before we finished writing; stop writing then.
        if (req.destroyed || req.writableEnded) return
        req.write(chunk)
        setTimeout(next, options.gapMs ?? 0)
      }
      next()
    } else {
      req.end(options.body)
    }
  })

/** The envelope assertions for a node:http answer. */
export const rawAsAnswer = (raw: RawAnswer): Answer => {
  const headers = new Headers()
  for (const [k, v] of Object.entries(raw.headers)) {
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v)
  }
  return { status: raw.status, headers, text: raw.text, json: parseOrUndefined(raw.text) }
}

export type SseEvent = Record<string, unknown>

/**
 * Reads an SSE body event by event (data lines parsed as JSON). `onEvent` may return "stop" to
 * leave early. Resolves with the events and the error that ended the body, if any.
 */
export const readEvents = async (
  response: Response,
  onEvent?: (event: SseEvent, index: number) => "stop" | void
): Promise<{ readonly events: Array<SseEvent>; readonly comments: number; readonly error: unknown }> => {
  const events: Array<SseEvent> = []
  let comments = 0
  const body = response.body
  if (body === null) return { events, comments, error: new Error("no body") }
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n")
        if (data === "") {
          if (frame.startsWith(":")) comments++
          continue
        }
        const event = JSON.parse(data) as SseEvent
        if (isResponsesDoor(response.url)) assertOpenResponses(eventIssues(event), `event #${events.length} of ${response.url}`)
        events.push(event)
        if (onEvent?.(event, events.length - 1) === "stop") {
          await reader.cancel()
          return { events, comments, error: undefined }
        }
      }
    }
    return { events, comments, error: undefined }
  } catch (error) {
    if (error instanceof SchemaViolation) throw error
    return { events, comments, error }
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 3_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("waitFor: timed out")
    await sleep(10)
  }
}

/** The model named by a lifecycle event (`response.model`), if it carries one. */
export const eventModel = (event: SseEvent): unknown =>
  typeof event["response"] === "object" && event["response"] !== null
    ? (event["response"] as Record<string, unknown>)["model"]
    : undefined
