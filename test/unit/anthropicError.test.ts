/**
 * src/domain/anthropicError.ts: each gateway error in Anthropic's shape, judged by the real
 * @anthropic-ai/sdk reading it from a local server (its error class, status, type, code, headers).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  ContentTooLargeError,
  GatewayTimeoutError,
  InternalServerError,
  NotFoundError,
  OverloadedError,
  PaymentRequiredError,
  PermissionDeniedError,
  RateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
  UnprocessableEntityError
} from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anthropicErrorOf, anthropicStreamError } from "../../src/domain/anthropicError.js"
import {
  type Envelope,
  envelopeOf,
  internalError,
  methodNotAllowed,
  routeNotFound,
  storeUnavailable
} from "../../src/domain/envelope.js"
import {
  InsufficientQuota,
  InvalidRequest,
  ModelNotFound,
  NoAvailableAccount,
  PermissionDenied,
  RateLimited,
  RequestTooLarge,
  StoreError,
  Unauthenticated,
  UpstreamFailed
} from "../../src/domain/errors.js"

interface Case {
  readonly name: string
  readonly envelope: Envelope
  readonly status: number
  readonly type: string
  // The SDK's classes have different constructor signatures; the test compares identity only.
  readonly sdkClass: abstract new(...args: never) => APIError
  readonly headers?: Record<string, string>
}

const cases: ReadonlyArray<Case> = [
  {
    name: "invalid request",
    envelope: envelopeOf(new InvalidRequest({ code: "invalid_json", message: "Body is not JSON" })),
    status: 400,
    type: "invalid_request_error",
    sdkClass: BadRequestError,
    headers: { "x-should-retry": "false" }
  },
  {
    name: "missing key",
    envelope: envelopeOf(new Unauthenticated({ code: "missing_api_key", message: "No API key" })),
    status: 401,
    type: "authentication_error",
    sdkClass: AuthenticationError
  },
  {
    name: "insufficient balance",
    envelope: envelopeOf(new InsufficientQuota({ code: "insufficient_balance", message: "Balance is 0" })),
    status: 402,
    type: "billing_error",
    sdkClass: PaymentRequiredError
  },
  {
    name: "content policy",
    envelope: envelopeOf(new PermissionDenied({ code: "content_policy_violation", message: "Refused by policy" })),
    status: 403,
    type: "permission_error",
    sdkClass: PermissionDeniedError
  },
  {
    name: "image not allowed",
    envelope: envelopeOf(new PermissionDenied({ code: "image_generation_not_allowed", message: "No images" })),
    status: 403,
    type: "permission_error",
    sdkClass: PermissionDeniedError
  },
  {
    name: "unknown model",
    envelope: envelopeOf(new ModelNotFound({ model: "claude-nope" })),
    status: 404,
    type: "not_found_error",
    sdkClass: NotFoundError
  },
  {
    name: "unknown route",
    envelope: routeNotFound("POST", "/v1/nope"),
    status: 404,
    type: "not_found_error",
    sdkClass: NotFoundError
  },
  {
    name: "method not allowed (status kept)",
    envelope: methodNotAllowed("GET", "/v1/messages", ["POST"]),
    status: 405,
    type: "invalid_request_error",
    sdkClass: APIError
  },
  {
    name: "request too slow to arrive",
    envelope: { status: 408, type: "invalid_request_error", code: "request_timeout", message: "Too slow", param: null },
    status: 408,
    type: "timeout_error",
    sdkClass: RequestTimeoutError
  },
  {
    name: "body too large",
    envelope: envelopeOf(new RequestTooLarge({ limitBytes: 1024 })),
    status: 413,
    type: "request_too_large",
    sdkClass: ContentTooLargeError
  },
  {
    name: "upstream refused the request (422 kept)",
    envelope: envelopeOf(new UpstreamFailed({ status: 422, code: "upstream_invalid_request", message: "Bad field" })),
    status: 422,
    type: "invalid_request_error",
    sdkClass: UnprocessableEntityError
  },
  {
    name: "upstream does not know the model (404 kept)",
    envelope: envelopeOf(new UpstreamFailed({ status: 404, code: "upstream_invalid_request", message: "No such model" })),
    status: 404,
    type: "not_found_error",
    sdkClass: NotFoundError
  },
  {
    name: "concurrency limit",
    envelope: envelopeOf(new RateLimited({ code: "concurrency_limit_exceeded", message: "Too many", retryAfterSeconds: 3 })),
    status: 429,
    type: "rate_limit_error",
    sdkClass: RateLimitError,
    headers: { "retry-after": "3" }
  },
  {
    name: "per-minute limit with its x-ratelimit headers",
    envelope: envelopeOf(
      new RateLimited({
        code: "rate_limit_exceeded",
        message: "RPM",
        retryAfterSeconds: 12.2,
        headers: { "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0" }
      })
    ),
    status: 429,
    type: "rate_limit_error",
    sdkClass: RateLimitError,
    headers: { "retry-after": "13", "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0" }
  },
  {
    name: "upstream rate limited",
    envelope: envelopeOf(new UpstreamFailed({ status: 429, code: "upstream_rate_limited", message: "Slow down", retryAfterSeconds: 7 })),
    status: 429,
    type: "rate_limit_error",
    sdkClass: RateLimitError,
    headers: { "retry-after": "7" }
  },
  {
    name: "internal error",
    envelope: internalError("req_1"),
    status: 500,
    type: "api_error",
    sdkClass: InternalServerError
  },
  {
    name: "upstream failed (502 kept)",
    envelope: envelopeOf(new UpstreamFailed({ status: 500, code: "upstream_error", message: "Upstream request failed (HTTP 500)" })),
    status: 502,
    type: "api_error",
    sdkClass: InternalServerError
  },
  {
    name: "store unavailable (503 kept: the gateway's own trouble, not load)",
    envelope: envelopeOf(new StoreError({ message: "db down" })),
    status: 503,
    type: "api_error",
    sdkClass: ServiceUnavailableError,
    headers: { "retry-after": "1" }
  },
  {
    name: "gateway timeout",
    envelope: { status: 504, type: "upstream_error", code: "upstream_timeout", message: "Timed out", param: null },
    status: 504,
    type: "timeout_error",
    sdkClass: GatewayTimeoutError
  },
  {
    name: "no available account is overloaded",
    envelope: envelopeOf(new NoAvailableAccount({ message: "No account", retryAfterSeconds: 5 })),
    status: 529,
    type: "overloaded_error",
    sdkClass: OverloadedError,
    headers: { "retry-after": "5" }
  },
  {
    name: "upstream overloaded",
    envelope: envelopeOf(new UpstreamFailed({ status: 529, code: "upstream_overloaded", message: "Upstream is overloaded" })),
    status: 529,
    type: "overloaded_error",
    sdkClass: OverloadedError
  }
]

describe("anthropicErrorOf", () => {
  it.each(cases)("$name: status $status, type $type, our message and code", (c) => {
    const answer = anthropicErrorOf(c.envelope, "req_abc")
    expect(answer.status).toBe(c.status)
    expect(answer.body).toEqual({
      type: "error",
      error: { type: c.type, message: c.envelope.message, details: { error_code: c.envelope.code } },
      request_id: "req_abc"
    })
    expect(answer.headers).toMatchObject({ ...c.headers, "request-id": "req_abc" })
  })

  it("only the overloaded codes leave their status: a plain 503 stays a 503", () => {
    expect(anthropicErrorOf(storeUnavailable, "r").status).toBe(503)
    expect(anthropicErrorOf({ ...storeUnavailable, code: "no_available_account" }, "r").status).toBe(529)
  })

  it("a conversation past the context window is told as Anthropic says it, which Claude Code reads to compact", () => {
    const tooLong = { ...storeUnavailable, status: 400, type: "invalid_request_error", code: "context_length_exceeded", message: "Your input exceeds the context window of this model." }
    const answer = anthropicErrorOf(tooLong, "r")
    expect(answer.status).toBe(400)
    expect(answer.body.error.message).toBe("prompt is too long: Your input exceeds the context window of this model.")
    // An Anthropic upstream's own words are kept as they are.
    const own = { ...tooLong, message: "prompt is too long: 210000 tokens > 200000 maximum" }
    expect(anthropicErrorOf(own, "r").body.error.message).toBe(own.message)
  })

  it("a stream's error event has the same type and no request id", () => {
    const envelope = envelopeOf(new NoAvailableAccount({ message: "No account" }))
    expect(anthropicStreamError(envelope)).toEqual({
      type: "error",
      error: { type: "overloaded_error", message: "No account", details: { error_code: "no_available_account" } }
    })
    expect(anthropicStreamError(envelopeOf(new RequestTooLarge({ limitBytes: 1 }))).error.type).toBe("request_too_large")
  })
})

describe("the Anthropic SDK reading these answers", () => {
  // What the server answers next, and how many requests it has seen.
  let respond: (res: import("node:http").ServerResponse) => void = (res) => res.end()
  let seen = 0
  let server: Server
  let baseURL: string
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen++
      req.resume()
      req.on("end", () => respond(res))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const answerWith = (c: { envelope: Envelope }) => {
    const answer = anthropicErrorOf(c.envelope, "req_sdk")
    respond = (res) => {
      res.writeHead(answer.status, { ...answer.headers, "content-type": "application/json" })
      res.end(JSON.stringify(answer.body))
    }
  }

  const request = { model: "claude-sonnet-4-6", max_tokens: 16, messages: [{ role: "user" as const, content: "hi" }] }

  const failure = async (client: Anthropic): Promise<APIError> => {
    const error: unknown = await client.messages.create(request).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(APIError)
    return error as APIError
  }

  it.each(cases)("$name: the SDK throws its class for $status with type, code and headers readable", async (c) => {
    answerWith(c)
    const error = await failure(new Anthropic({ baseURL, apiKey: "sk-test", maxRetries: 0 }))
    expect(error.constructor).toBe(c.sdkClass)
    expect(error.status).toBe(c.status)
    expect(error.type).toBe(c.type)
    expect((error.error as { error: { type: string } }).error.type).toBe(c.type)
    expect(error.apiMessage).toBe(c.envelope.message)
    expect(error.errorCode).toBe(c.envelope.code)
    expect(error.requestID).toBe("req_sdk")
    for (const [name, value] of Object.entries(c.headers ?? {})) expect(error.headers?.get(name)).toBe(value)
  })

  it("a 4xx marked no-retry is asked once even with retries left", async () => {
    answerWith(cases[0]!)
    const before = seen
    await failure(new Anthropic({ baseURL, apiKey: "sk-test", maxRetries: 2 }))
    expect(seen - before).toBe(1)
  })

  it("an overloaded answer is retried after its retry-after, then the request succeeds", async () => {
    const overloaded = anthropicErrorOf(envelopeOf(new NoAvailableAccount({ message: "busy", retryAfterSeconds: 1 })), "r")
    let calls = 0
    respond = (res) => {
      calls++
      if (calls === 1) {
        res.writeHead(overloaded.status, { ...overloaded.headers, "content-type": "application/json" })
        res.end(JSON.stringify(overloaded.body))
        return
      }
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-6",
        content: [{ type: "text", text: "hello" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 }
      }))
    }
    const message = await new Anthropic({ baseURL, apiKey: "sk-test", maxRetries: 1 }).messages.create(request)
    expect(calls).toBe(2)
    expect(message.content[0]).toMatchObject({ type: "text", text: "hello" })
  })

  it("an error event after the stream started is thrown with its type and code", async () => {
    const event = anthropicStreamError(envelopeOf(new UpstreamFailed({ status: 529, code: "upstream_overloaded", message: "Upstream is overloaded" })))
    respond = (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(`event: message_start\ndata: ${JSON.stringify({
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "claude-sonnet-4-6",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 }
        }
      })}\n\n`)
      res.end(`event: error\ndata: ${JSON.stringify(event)}\n\n`)
    }
    const stream = await new Anthropic({ baseURL, apiKey: "sk-test", maxRetries: 0 }).messages.create({ ...request, stream: true })
    const error: unknown = await (async () => {
      for await (const _ of stream) { /* read to the error */ }
    })().then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(APIError)
    const apiError = error as APIError
    expect(apiError.type).toBe("overloaded_error")
    expect(apiError.errorCode).toBe("upstream_overloaded")
    expect(apiError.apiMessage).toBe("Upstream is overloaded")
  })
})
