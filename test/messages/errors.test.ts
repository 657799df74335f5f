/**
 * Failures on the Messages door, judged by the Anthropic SDK's error classes: each refusal in
 * Anthropic's shape and status, upstream overload as the SDK's OverloadedError, and a stream that
 * fails after it started ends with an `error` event the SDK throws on, never a silent cut.
 */
import Anthropic, { APIError } from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { simulateResponses } from "../../src/services/upstream/simulator/responses.js"
import {
  accountCredential,
  type Door,
  DOORS,
  keyFor,
  type MessagesSetup,
  postMessages,
  sdk,
  sseFrames,
  startMessagesGateway
} from "../support/messagesGateway.js"
import type { Json, Reply, Seen } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

const hello = { role: "user" as const, content: "Hello there" }

/** The error the promise rejects with (the test fails if it resolves). */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}

/** The body the SDK read: Anthropic's envelope exactly. */
const expectAnthropicBody = (error: APIError, type: string) => {
  const body = error.error as { type: string; error: { type: string; message: string }; request_id: string }
  expect(Object.keys(body).sort()).toEqual(["error", "request_id", "type"])
  expect(body.type).toBe("error")
  expect(body.error.type).toBe(type)
  expect(typeof body.error.message).toBe("string")
  expect(body.error.message).not.toBe("")
  expect(error.type).toBe(type)
  expect(error.requestID).toBe(body.request_id)
}

const simulatedEvents = (door: Door, seen: Seen): ReadonlyArray<Json> =>
  door.passthrough ? simulateMessages(seen.body!).events : simulateResponses(seen.body!, { createdAt: 1_750_000_000 }).events

/** Events up to and including the first text delta: the client has seen output when the failure comes. */
const untilFirstText = (events: ReadonlyArray<Json>): Array<Json> => {
  const i = events.findIndex((e) => e["type"] === "content_block_delta" || e["type"] === "response.output_text.delta")
  return events.slice(0, i + 1)
}

describe.each(DOORS)("messages errors, $platform group", (door) => {
  it("a bad key: AuthenticationError, 401 authentication_error", async () => {
    const error = await rejection(sdk(setup.gw, "sk-msg-not-a-key").messages.create({ model: door.model, max_tokens: 16, messages: [hello] }))
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError)
    expect((error as APIError).status).toBe(401)
    expectAnthropicBody(error as APIError, "authentication_error")
  })

  it("no model: BadRequestError, 400 invalid_request_error", async () => {
    const params = { max_tokens: 16, messages: [hello] } as unknown as Anthropic.MessageCreateParamsNonStreaming
    const error = await rejection(sdk(setup.gw, keyFor(door, "main")).messages.create(params))
    expect(error).toBeInstanceOf(Anthropic.BadRequestError)
    expectAnthropicBody(error as APIError, "invalid_request_error")
  })

  it("what Anthropic refuses is refused here too, in its words, before any upstream call", async () => {
    const before = setup.upstream.requests.length
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ model: door.model, messages: [hello] }, "max_tokens: Field required"],
      [{ max_tokens: 16, messages: [hello] }, "model: Field required"],
      [{ model: door.model, max_tokens: 16 }, "messages: Field required"],
      [{ model: door.model, max_tokens: "16", messages: [hello] }, "max_tokens: Input should be a valid integer"],
      [{ model: door.model, max_tokens: 0, messages: [hello] }, "max_tokens: Input should be greater than or equal to 1"],
      [{ model: door.model, max_tokens: 16, messages: "hi" }, "messages: Input should be a valid list"]
    ]
    for (const [body, message] of cases) {
      const params = body as unknown as Anthropic.MessageCreateParamsNonStreaming
      for (const error of [await rejection(sdk(setup.gw, keyFor(door, "main")).messages.create(params)), await rejection(sdk(setup.gw, keyFor(door, "main")).messages.create({ ...params, stream: true }))]) {
        expect(error).toBeInstanceOf(Anthropic.BadRequestError)
        expectAnthropicBody(error as APIError, "invalid_request_error")
        expect(((error as APIError).error as { error: { message: string } }).error.message).toBe(message)
      }
    }
    expect(setup.upstream.requests.length).toBe(before)
    // count_tokens takes no max_tokens, as Anthropic's does not.
    const counted = await postMessages(setup.gw, keyFor(door, "count"), { model: door.model, messages: [hello] }, { path: "/v1/messages/count_tokens" })
    expect(counted.status).toBe(200)
  })

  it("malformed JSON: 400 in Anthropic's shape, with the request id", async () => {
    const before = setup.upstream.requests.length
    const res = await postMessages(setup.gw, keyFor(door, "main"), `{"model": "${door.model}", "messages": [`)
    expect(res.status).toBe(400)
    expect(res.headers.get("content-type")).toMatch(/^application\/json/)
    const body = (await res.json()) as { type: string; error: Record<string, unknown>; request_id: string }
    expect(Object.keys(body).sort()).toEqual(["error", "request_id", "type"])
    expect(body.type).toBe("error")
    expect(body.error["type"]).toBe("invalid_request_error")
    expect(typeof body.error["message"]).toBe("string")
    expect(body.request_id).toMatch(/\S{8,}/)
    expect(res.headers.get("request-id")).toBe(body.request_id)
    expect(setup.upstream.requests.length).toBe(before)
  })

  it("a model the group does not offer: NotFoundError, 404 not_found_error", async () => {
    const error = await rejection(sdk(setup.gw, keyFor(door, "main")).messages.create({ model: `${door.model}-nope`, max_tokens: 16, messages: [hello] }))
    expect(error).toBeInstanceOf(Anthropic.NotFoundError)
    expectAnthropicBody(error as APIError, "not_found_error")
  })

  it("over the key's rpm_limit: RateLimitError, 429 rate_limit_error with retry-after", async () => {
    const client = sdk(setup.gw, keyFor(door, "rpm"))
    await client.messages.create({ model: door.model, max_tokens: 16, messages: [hello] })
    const error = await rejection(client.messages.create({ model: door.model, max_tokens: 16, messages: [hello] }))
    expect(error).toBeInstanceOf(Anthropic.RateLimitError)
    expectAnthropicBody(error as APIError, "rate_limit_error")
    const retryAfter = Number((error as APIError).headers?.get("retry-after"))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    // A stream is refused before it starts: a status the SDK's stream raises as the same class.
    const streamed = await rejection(client.messages.stream({ model: door.model, max_tokens: 16, messages: [hello] }).finalMessage())
    expect(streamed).toBeInstanceOf(Anthropic.RateLimitError)
  })

  it("an upstream refusal (400) reaches the client as a BadRequestError with the upstream's message, a too-long prompt in Anthropic's words", async () => {
    // Claude Code reads the message (a too-long prompt starts its compaction).
    const message = door.passthrough ? "prompt is too long: 210000 tokens > 200000 maximum" : "Your input exceeds the context window of this model."
    const unscript = setup.upstream.script((seen): Reply | undefined =>
      !seen.raw.includes("TOO-LONG")
        ? undefined
        : {
          _tag: "Json",
          status: 400,
          body: door.passthrough
            ? { type: "error", error: { type: "invalid_request_error", message }, request_id: "req_upstream_1" }
            : { error: { message, type: "invalid_request_error", param: "input", code: "context_length_exceeded" } }
        }
    )
    try {
      const client = sdk(setup.gw, keyFor(door, "main"))
      const params = { model: door.model, max_tokens: 16, messages: [{ role: "user" as const, content: "TOO-LONG" }] }
      for (const error of [await rejection(client.messages.create(params)), await rejection(client.messages.stream(params).finalMessage())]) {
        expect(error).toBeInstanceOf(Anthropic.BadRequestError)
        expectAnthropicBody(error as APIError, "invalid_request_error")
        // An OpenAI upstream's words come in Anthropic's ("prompt is too long"), which Claude Code compacts on.
        expect((error as APIError).apiMessage).toBe(door.passthrough ? message : `prompt is too long: ${message}`)
      }
    } finally {
      unscript()
    }
  })

  it("an overloaded upstream (529): the SDK's OverloadedError, JSON and stream", async () => {
    const busy = accountCredential(door, "busy")
    const unscript = setup.upstream.script((seen): Reply | undefined =>
      seen.credential !== busy
        ? undefined
        : {
          _tag: "Json",
          status: 529,
          body: door.passthrough
            ? { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
            : { error: { message: "Overloaded", type: "server_error", code: "server_is_overloaded", param: null } }
        }
    )
    try {
      const client = sdk(setup.gw, keyFor(door, "busy"))
      const before = setup.upstream.requests.filter((r) => r.credential === busy).length
      const error = await rejection(client.messages.create({ model: door.model, max_tokens: 16, messages: [hello] }))
      expect(setup.upstream.requests.filter((r) => r.credential === busy).length).toBeGreaterThan(before)
      expect(error).toBeInstanceOf(Anthropic.OverloadedError)
      expect((error as APIError).status).toBe(529)
      expectAnthropicBody(error as APIError, "overloaded_error")
      const streamed = await rejection(client.messages.stream({ model: door.model, max_tokens: 16, messages: [hello] }).finalMessage())
      expect(streamed).toBeInstanceOf(Anthropic.OverloadedError)
    } finally {
      unscript()
    }
  })

  describe("a failure after the stream started", () => {
    const cut = accountCredential(door, "cut")
    let unscript: () => void = () => undefined
    beforeAll(() => {
      unscript = setup.upstream.script((seen): Reply | undefined => {
        if (seen.credential !== cut || seen.body === undefined) return undefined
        const events = untilFirstText(simulatedEvents(door, seen))
        const prompt = JSON.stringify(seen.body)
        if (prompt.includes("CUT-ME")) return { _tag: "Sse", events, ending: "cut" }
        if (prompt.includes("FAIL-ME")) {
          // The upstream's own failure event, in its own format.
          const failure: Json = door.passthrough
            ? { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
            : { type: "response.failed", response: { id: "resp_failed", status: "failed", error: { code: "server_error", message: "The model crashed" }, output: [] } }
          return { _tag: "Sse", events: [...events, failure], ending: "end" }
        }
        return undefined
      })
    })
    afterAll(() => unscript())

    const streamOf = (content: string) => ({ model: door.model, max_tokens: 256, stream: true, messages: [{ role: "user" as const, content }] })

    it("an upstream cut: the raw stream ends with an error event, no message_stop", async () => {
      const res = await postMessages(setup.gw, keyFor(door, "cut"), streamOf("CUT-ME raw"))
      expect(res.status).toBe(200)
      const frames = sseFrames(await res.text())
      for (const frame of frames) expect(frame.event).toBe(frame.data["type"])
      expect(frames[0]?.event).toBe("message_start")
      expect(frames.some((f) => f.event === "content_block_delta")).toBe(true)
      expect(frames.map((f) => f.event)).not.toContain("message_stop")
      const end = frames.at(-1)!
      expect(end.event).toBe("error")
      expect(end.data).toMatchObject({ type: "error", error: { type: expect.stringMatching(/^(api_error|overloaded_error)$/), message: expect.any(String) } })
    })

    it("an upstream cut: messages.stream throws the SDK's APIError", async () => {
      const before = setup.upstream.requests.length
      const error = await rejection(sdk(setup.gw, keyFor(door, "cut")).messages.stream(streamOf("CUT-ME sdk")).finalMessage())
      // The stream had started: the upstream was reached and the failure came as an event.
      expect(setup.upstream.requests.length).toBeGreaterThan(before)
      expect(error).toBeInstanceOf(APIError)
      expect((error as APIError).status).toBeUndefined()
      expect((error as APIError).type).toMatch(/^(api_error|overloaded_error)$/)
    })

    it("the upstream's own failure event mid-stream reaches the client as an error event", async () => {
      const res = await postMessages(setup.gw, keyFor(door, "cut"), streamOf("FAIL-ME raw"))
      const text = await res.text()
      const frames = sseFrames(text)
      expect(frames.at(-1)?.event).toBe("error")
      expect(frames.map((f) => f.event)).not.toContain("message_stop")
      if (door.passthrough) {
        expect(text).toBe(setup.upstream.requests.at(-1)!.sent)
        expect(frames.at(-1)?.data).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
      } else {
        expect(frames.at(-1)?.data).toMatchObject({ type: "error", error: { type: "api_error", message: "The model crashed" } })
      }
      const error = await rejection(sdk(setup.gw, keyFor(door, "cut")).messages.stream(streamOf("FAIL-ME sdk")).finalMessage())
      expect(error).toBeInstanceOf(APIError)
      expect((error as APIError).type).toBe(door.passthrough ? "overloaded_error" : "api_error")
    })
  })
})
