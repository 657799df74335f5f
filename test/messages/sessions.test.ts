/**
 * Claude Code's session header on the Messages door: the turns of one `x-claude-code-session-id`
 * stay on one account of a two-account group (its prompt cache lives there), and an OpenAI
 * upstream is told one `prompt_cache_key` per session, which never carries the key.
 */
import type Anthropic from "@anthropic-ai/sdk"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { accountCredential, DOORS, keyFor, type MessagesSetup, sdk, startMessagesGateway } from "../support/messagesGateway.js"
import type { Seen } from "../support/messagesUpstream.js"

let setup: MessagesSetup
beforeAll(async () => {
  setup = await startMessagesGateway()
})
afterAll(() => setup.close())

describe.each(DOORS)("sessions, $platform group of two accounts", (door) => {
  const key = keyFor(door, "pair")
  const accounts = [accountCredential(door, "pair-a"), accountCredential(door, "pair-b")]

  /** One request, with a session header when given; what the upstream received for it. */
  const send = async (session: string | undefined, messages: Array<Anthropic.MessageParam>): Promise<Seen> => {
    const before = setup.upstream.requests.length
    const client = sdk(setup.gw, key, session === undefined ? {} : { headers: { "x-claude-code-session-id": session } })
    await client.messages.create({ model: door.model, max_tokens: 64, system: "You are a coding agent.", messages })
    const reached = setup.upstream.requests.slice(before)
    expect(reached).toHaveLength(1)
    expect(accounts).toContain(reached[0]!.credential)
    return reached[0]!
  }

  /** Turn n of a conversation: n user messages with the assistant's answers between them. */
  const turns = (topic: string, n: number): Array<Anthropic.MessageParam> =>
    Array.from({ length: n }, (_, i) => [
      ...(i > 0 ? [{ role: "assistant" as const, content: `Answer ${i} about ${topic}.` }] : []),
      { role: "user" as const, content: `${topic}: question ${i + 1}` }
    ]).flat()

  it("without a session, requests with different prompts spread over both accounts (least recently used)", async () => {
    const used = new Set<string | undefined>()
    for (const topic of ["alpha", "beta", "gamma", "delta"]) used.add((await send(undefined, turns(`unbound ${topic}`, 1))).credential)
    expect(used.size).toBe(2)
  })

  it("the turns of one session id stay on one account, interleaved with another session", async () => {
    const a: Array<Seen> = []
    const b: Array<Seen> = []
    // Each turn opens with a different first message, so only the header can bind them.
    a.push(await send("session-A", turns("sea", 1)))
    a.push(await send("session-A", turns("mountains", 2)))
    b.push(await send("session-B", turns("desert", 1)))
    a.push(await send("session-A", turns("forest", 3)))
    b.push(await send("session-B", turns("river", 2)))
    expect(new Set(a.map((s) => s.credential)).size).toBe(1)
    expect(new Set(b.map((s) => s.credential)).size).toBe(1)

    if (door.passthrough) {
      // The body is the client's: nothing added for the cache.
      for (const s of [...a, ...b]) expect(s.body?.["prompt_cache_key"]).toBeUndefined()
      return
    }
    const keysOf = (seen: Array<Seen>) => seen.map((s) => s.body?.["prompt_cache_key"])
    const [ka] = keysOf(a)
    const [kb] = keysOf(b)
    expect(typeof ka).toBe("string")
    expect(typeof kb).toBe("string")
    expect(keysOf(a)).toEqual([ka, ka, ka])
    expect(keysOf(b)).toEqual([kb, kb])
    expect(ka).not.toBe(kb)
    for (const k of [ka, kb] as Array<string>) {
      expect(k).not.toContain(key)
      expect(k).not.toContain("sk-")
      expect(k.length).toBeLessThanOrEqual(64)
    }
  })

  // Only a translated request is given a cache key.
  if (door.passthrough) return
  it("the same session id under another key is another session (never the same cache key)", async () => {
    const here = await send("session-shared", turns("shared", 1))
    const client = sdk(setup.gw, keyFor(door, "main"), { headers: { "x-claude-code-session-id": "session-shared" } })
    await client.messages.create({ model: door.model, max_tokens: 64, messages: turns("shared", 1) })
    const there = setup.upstream.requests.at(-1)!
    expect(there.body?.["prompt_cache_key"]).toEqual(expect.any(String))
    expect(there.body?.["prompt_cache_key"]).not.toBe(here.body?.["prompt_cache_key"])
  })
})
