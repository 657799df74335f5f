/**
 * An upstream page that echoes the request's credential (issue 32, item 3) never gets it to the
 * client, on both doors and both platforms: a stream request answered 200 with something other
 * than `text/event-stream` is a 502 `upstream_invalid_response` before any byte (failed over like a
 * 5xx when another account is there; a `response.failed` / `error` event when the stream already
 * started, waiting for its slot); SSE comments and fields other than `event`/`data` are not
 * relayed; every frame loses the account's key and gateway keys, and a frame the wire does not
 * know (or an error) loses anything shaped like a credential, as an error body does.
 *
 * The accounts' keys here are opaque (no `sk-`, no `Bearer` around them in the echo of a frame's
 * text), so only the gateway knowing them can take them out.
 */
import { responseObject } from "../../src/domain/responseObject.js"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { expectEnvelope, readEvents, waitFor } from "../http/helpers.js"
import { type HostileRequest, type HostileUpstream, startHostileUpstream } from "../support/hostileUpstream.js"
import { fakeUpstreamConfig, startGateway, type TestGateway } from "../support/gateway.js"

const OPENAI_SECRET = "acct-openai-9f8e7d6c5b4a3921"
const ANTHROPIC_SECRET = "acct-anthropic-1a2b3c4d5e6f7788"
const env = { FAKE_OPENAI_KEY: OPENAI_SECRET, FAKE_ANTHROPIC_KEY: ANTHROPIC_SECRET }
/** A key of another tenant, as the gateway makes them, and a credential of no account here. */
const GATEWAY_KEY = "sk-mg-Q2hlY2tUaGlzSXNOb3RBUmVhbEtleUF0QWxsMDEyMzQ1Njc4"
const OTHER_CREDENTIAL = "other-credential-5566778899"

/** What a hostile page says of the request it got: its credential header, as it came. */
const echo = (request: HostileRequest): string =>
  request.path.startsWith("/v1/responses") ? `authorization: ${request.headers["authorization"]}` : `x-api-key: ${request.headers["x-api-key"]}`
const secretOf = (request: HostileRequest): string => (request.path.startsWith("/v1/responses") ? OPENAI_SECRET : ANTHROPIC_SECRET)

const frame = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** A complete Responses stream whose answer text is `text`, with hostile frames between its events. */
const responsesStream = (text: string, hostile: ReadonlyArray<string>): Array<string> => {
  const response = responseObject({ id: "resp_hostile", createdAt: 1, model: "gpt-5.4", status: "in_progress" })
  const item = { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] }
  return [
    frame("response.created", { sequence_number: 0, response: { ...response, status: "in_progress" } }),
    ...hostile,
    frame("response.output_item.added", { sequence_number: 1, output_index: 0, item: { ...item, status: "in_progress", content: [] } }),
    frame("response.output_text.delta", { sequence_number: 2, item_id: "msg_1", output_index: 0, content_index: 0, delta: text }),
    frame("response.output_item.done", { sequence_number: 3, output_index: 0, item }),
    frame("response.completed", {
      sequence_number: 4,
      response: { ...response, status: "completed", output: [item], usage: { input_tokens: 5, output_tokens: 9, total_tokens: 14, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } }
    })
  ]
}

/** A complete Messages stream whose answer text is `text`, with hostile frames between its events. */
const messagesStream = (text: string, hostile: ReadonlyArray<string>): Array<string> => [
  frame("message_start", {
    message: { id: "msg_hostile", type: "message", role: "assistant", model: "claude-sonnet-4-6", content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } }
  }),
  ...hostile,
  frame("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  frame("content_block_delta", { index: 0, delta: { type: "text_delta", text } }),
  frame("content_block_stop", { index: 0 }),
  frame("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }),
  frame("message_stop", {})
]

/** The answer text of a hostile stream: the bare key, a gateway key, and words that look like credentials but are not. */
const answerText = (request: HostileRequest) =>
  `your key is ${secretOf(request)}; theirs is ${GATEWAY_KEY}. HTTP Basic authentication sends api_key = os.environ`

/** Frames an upstream page might say besides its events: comments, ids, frames of no known kind. */
const hostileFrames = (request: HostileRequest): Array<string> => [
  `: ${echo(request)}\n\n`,
  `: ${echo(request)}\nid: ${secretOf(request)}\nretry: 1000\nevent: ping\ndata: {"type":"ping"}\n\n`,
  `event: debug\ndata: {"type":"debug","headers":"${echo(request)}","other":"x-api-key: ${OTHER_CREDENTIAL}"}\n\n`,
  `data: ${echo(request)} api_key=${OTHER_CREDENTIAL}\n\n`
]

const hostileStream = (request: HostileRequest): Array<string> =>
  request.path.startsWith("/v1/responses")
    ? responsesStream(answerText(request), hostileFrames(request))
    : messagesStream(answerText(request), hostileFrames(request))

/** Both doors on both platforms: passthrough (Responses on openai, Messages on anthropic) and translated. */
const ROUTES = [
  { door: "responses", key: "sk-test-openai-0001", model: "gpt-5.4", platform: "openai" },
  { door: "messages", key: "sk-test-anthropic-0001", model: "claude-sonnet-4-6", platform: "anthropic" },
  { door: "responses", key: "sk-test-anthropic-0001", model: "claude-sonnet-4-6", platform: "anthropic" },
  { door: "messages", key: "sk-test-openai-0001", model: "gpt-5.4", platform: "openai" }
] as const

type Route = (typeof ROUTES)[number]

const streamRequest = (url: string, route: Route, input = "hi") =>
  fetch(`${url}/v1/${route.door}`, {
    method: "POST",
    headers: { authorization: `Bearer ${route.key}`, "content-type": "application/json" },
    body: JSON.stringify(
      route.door === "responses"
        ? { model: route.model, input, stream: true }
        : { model: route.model, max_tokens: 64, messages: [{ role: "user", content: input }], stream: true }
    )
  })

const secretsIn = (text: string): Array<string> =>
  [OPENAI_SECRET, ANTHROPIC_SECRET, GATEWAY_KEY, OTHER_CREDENTIAL].filter((secret) => text.includes(secret))

describe("a hostile upstream that echoes the account's credential", () => {
  let upstream: HostileUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startHostileUpstream()
  })
  // A gateway each: a 502 cools its only account down for the next requests.
  beforeEach(async () => {
    gw = await startGateway({ config: fakeUpstreamConfig(upstream.url), env })
  })
  afterEach(() => gw.close())
  afterAll(() => upstream.close())

  describe.each(ROUTES)("$door door, $platform group", (route) => {
    it.each([
      ["an HTML page", "text/html; charset=utf-8", (r: HostileRequest) => `<html><body><pre>${echo(r)}</pre></body></html>`],
      ["a JSON page", "application/json", (r: HostileRequest) => JSON.stringify({ echo: echo(r), headers: r.headers })],
      ["no content type at all", "", (r: HostileRequest) => `data: ${echo(r)}\n\n`]
    ])("a 200 stream answer with %s is a 502 upstream_invalid_response, and no byte of it", async (_, contentType, body) => {
      upstream.setScript((request) => ({ _tag: "Page", status: 200, contentType, body: body(request) }))
      const res = await streamRequest(gw.url, route)
      const text = await res.text()
      expect(secretsIn(text)).toEqual([])
      expect(res.status).toBe(502)
      expect(res.headers.get("content-type")).toMatch(/^application\/json/)
      if (route.door === "responses") {
        expectEnvelope({ status: res.status, headers: res.headers, text, json: JSON.parse(text) }, {
          status: 502,
          type: "upstream_error",
          code: "upstream_invalid_response"
        })
      } else {
        expect(JSON.parse(text)).toMatchObject({ type: "error", error: { type: "api_error", details: { error_code: "upstream_invalid_response" } } })
      }
    })

    it("comments, ids and unknown frames are not relayed, and no frame carries a credential", async () => {
      upstream.setScript((request) => ({ _tag: "Chunks", contentType: "text/event-stream; charset=utf-8", chunks: hostileStream(request) }))
      const res = await streamRequest(gw.url, route)
      expect(res.status).toBe(200)
      const text = await res.text()
      expect(secretsIn(text)).toEqual([])
      expect(text).not.toMatch(/^:|^id:|^retry:/m)
      // The answer itself is there, its ordinary words as they were, the keys in it replaced.
      expect(text).toContain("your key is [redacted]; theirs is [redacted]. HTTP Basic authentication sends api_key = os.environ")
      expect(text).toMatch(route.door === "responses" ? /response\.completed/ : /message_stop/)
    })
  })
})

describe("a 200 stream answer that is not an event stream, with another account to try", () => {
  it("fails over to the next account, which answers the stream", async () => {
    const upstream = await startHostileUpstream()
    const base = fakeUpstreamConfig(upstream.url)
    const second = { ...base.accounts[0]!, name: "fake-openai-2" }
    const gw = await startGateway({ config: { ...base, accounts: [...base.accounts, second] }, env })
    try {
      upstream.setScript((request, index) =>
        index === 0
          ? { _tag: "Page", status: 200, contentType: "text/html", body: `<pre>${echo(request)}</pre>` }
          : { _tag: "Chunks", contentType: "text/event-stream", chunks: responsesStream("hello", []) }
      )
      const res = await streamRequest(gw.url, ROUTES[0])
      expect(res.status).toBe(200)
      const { events } = await readEvents(res)
      expect(events.at(-1)?.["type"]).toBe("response.completed")
      expect(upstream.requests).toHaveLength(2)
    } finally {
      await gw.close()
      await upstream.close()
    }
  })
})

describe("a stream that waited for its slot, then got a page that is not an event stream", () => {
  let upstream: HostileUpstream
  let gw: TestGateway
  beforeAll(async () => {
    upstream = await startHostileUpstream()
    const base = fakeUpstreamConfig(upstream.url)
    // One slot for the user: a second stream waits for it inside its SSE response.
    gw = await startGateway({ config: { ...base, users: [{ name: "alice", balance_usd: 50, concurrency: 1 }] }, env })
  })
  afterAll(async () => {
    await gw.close()
    await upstream.close()
  })

  it.each([ROUTES[0], ROUTES[1]])("$door door: the started stream ends with the failure as an event", async (route) => {
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const seen = upstream.requests.length
    upstream.setScript((request, index) =>
      index === seen
        ? { _tag: "Chunks", contentType: "text/event-stream", chunks: hostileStream(request), before: { at: 1, wait: held } }
        : { _tag: "Page", status: 200, contentType: "text/html", body: `<pre>${echo(request)}</pre>` }
    )
    const first = await streamRequest(gw.url, route, "first")
    await waitFor(() => upstream.requests.length === seen + 1)
    const second = await streamRequest(gw.url, route, "second")
    // Answered at once: it waits for the slot inside its stream.
    expect(second.status).toBe(200)
    release()
    await first.text()
    const text = await second.text()
    expect(secretsIn(text)).toEqual([])
    expect(upstream.requests).toHaveLength(seen + 2)
    const last = JSON.parse(text.trim().split("\n").at(-1)!.slice("data: ".length)) as Record<string, unknown>
    if (route.door === "responses") {
      expect(last).toMatchObject({ type: "response.failed", response: { error: { code: "upstream_invalid_response" } } })
    } else {
      expect(last).toMatchObject({ type: "error", error: { type: "api_error" } })
      expect(JSON.stringify(last)).toContain("text/event-stream")
    }
  })
})
