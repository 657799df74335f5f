/**
 * A key's concurrency limit on the Messages door: with its one slot taken by an open stream, a
 * second request is refused as the SDK's RateLimitError with a retry-after (JSON), or fails as a
 * rate_limit_error the SDK throws (stream); the slot comes back when the first client leaves.
 */
import Anthropic, { APIError } from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { simulateMessages } from "../../src/services/upstream/simulator/messages.js"
import { simulateResponses } from "../../src/services/upstream/simulator/responses.js"
import { waitFor } from "../http/helpers.js"
import { DOORS, keyFor, type MessagesSetup, postMessages, sdk, startMessagesGateway } from "../support/messagesGateway.js"
import type { Reply } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  // A short wait for a slot, so the refusal comes within the test (not a timing assertion).
  setup = await startMessagesGateway({ slotWaitMillis: 300 })
  setup.upstream.script((seen): Reply | undefined => {
    if (seen.body === undefined || !seen.raw.includes("HOLD-SOLO")) return undefined
    const events = seen.path === "/v1/messages"
      ? simulateMessages(seen.body).events
      : simulateResponses(seen.body, { createdAt: 1_750_000_000 }).events
    return { _tag: "Sse", events: events.slice(0, 2), ending: "hold" }
  })
})
afterAll(() => setup.close())

const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}

describe.each(DOORS)("concurrency 1, $platform group", (door) => {
  const key = keyFor(door, "solo")

  it("a second request while a stream holds the slot: 429 rate_limit_error with retry-after; the slot returns after", async () => {
    const controller = new AbortController()
    const held = await postMessages(setup.gw, key, {
      model: door.model,
      max_tokens: 64,
      stream: true,
      messages: [{ role: "user", content: "HOLD-SOLO" }]
    }, { signal: controller.signal })
    expect(held.status).toBe(200)
    const reader = held.body!.getReader()
    await reader.read()

    const client = sdk(setup.gw, key)
    const params = { model: door.model, max_tokens: 64, messages: [{ role: "user" as const, content: "Second" }] }
    const error = await rejection(client.messages.create(params))
    expect(error).toBeInstanceOf(Anthropic.RateLimitError)
    const apiError = error as APIError
    expect(apiError.type).toBe("rate_limit_error")
    expect(Number(apiError.headers?.get("retry-after"))).toBeGreaterThan(0)

    const streamed = await rejection(client.messages.stream(params).finalMessage())
    expect(streamed).toBeInstanceOf(APIError)
    expect((streamed as APIError).type).toBe("rate_limit_error")

    controller.abort()
    await waitFor(() => setup.upstream.requests.filter((r) => r.raw.includes("HOLD-SOLO")).every((r) => r.abandoned), 5_000)
    // The slot is released with the stream: a request now gets through (retried while the release lands).
    let answered: Anthropic.Message | undefined
    await waitFor(async () => {
      answered = await client.messages.create(params).catch(() => undefined)
      return answered !== undefined
    }, 5_000)
    expect(answered?.type).toBe("message")
  })
})
