/**
 * count_tokens on an Anthropic group says nothing of its account's health: the provider limits
 * count_tokens apart from messages, so its 429 must not cool the account down for another key's
 * real traffic (src/core/upstreamCall.ts `reportsHealth: false`).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { accountCredential, DOORS, keyFor, type MessagesSetup, postMessages, startMessagesGateway } from "../support/messagesGateway.js"

const anthropic = DOORS.find((d) => d.platform === "anthropic")!

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

describe("count_tokens and account health, anthropic group", () => {
  it("a 429 on count_tokens does not cool the account down: another key's /v1/messages is answered by it", async () => {
    const credential = accountCredential(anthropic, "main")
    const unscript = setup.upstream.script((seen) =>
      seen.path === "/v1/messages/count_tokens" && seen.credential === credential
        ? {
          _tag: "Json",
          status: 429,
          headers: { "retry-after": "60" },
          body: { type: "error", error: { type: "rate_limit_error", message: "Number of count_tokens requests has exceeded your rate limit" } }
        }
        : undefined
    )
    try {
      const count = await postMessages(setup.gw, keyFor(anthropic, "count"), {
        model: anthropic.model,
        messages: [{ role: "user", content: "How many tokens?" }]
      }, { path: "/v1/messages/count_tokens" })
      expect(count.status).toBe(429)
      expect(((await count.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error")
    } finally {
      unscript()
    }

    const before = setup.upstream.requests.length
    const res = await postMessages(setup.gw, keyFor(anthropic, "main"), {
      model: anthropic.model,
      max_tokens: 32,
      messages: [{ role: "user", content: "Hello" }]
    })
    expect(res.status, await res.clone().text()).toBe(200)
    const reached = setup.upstream.requests.slice(before)
    expect(reached.map((r) => [r.path, r.credential])).toEqual([["/v1/messages", credential]])
  })
})
