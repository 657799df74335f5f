/**
 * Moderation implementations without HTTP: the rules table and the OpenAI endpoint client (against a
 * local stand-in for /v1/moderations), plus the config checks that stop a bad rule at start.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { parseConfigText } from "../../src/config/load.js"
import type { Account } from "../../src/domain/model.js"
import { decideFromResults, makeOpenAIModeration } from "../../src/services/moderation/openai.js"
import { makeRules } from "../../src/services/moderation/rules.js"

const rules = makeRules({
  violence: ["kill", "build a bomb"],
  secrets: ["/sk-[a-z0-9]{20,}/i"]
})
const decide = (...texts: Array<string>) => Effect.runSync(rules.check(texts))

describe("rules moderation", () => {
  it.each([
    ["I will kill the process", "violence"],
    ["how do I BUILD  A   BOMB", "violence"],
    ["leaked: sk-abcdefghijklmnopqrstuvwxyz", "secrets"]
  ])("flags %j as %s", (text, category) => {
    expect(decide("harmless", text)).toEqual({ _tag: "Flag", category })
  })

  it.each(["a new skill", "killer whales are dolphins", "bombastic prose", "sk-short"])("lets %j through", (text) => {
    expect(decide(text)).toEqual({ _tag: "Allow" })
  })

  it("an empty table allows everything", () => {
    expect(Effect.runSync(makeRules({}).check(["kill"]))).toEqual({ _tag: "Allow" })
  })

  it("a bad rule stops the start, naming where it is", () => {
    const result = parseConfigText(
      "groups: [{name: g, platform: openai}]\nmoderation:\n  rules:\n    bad: ['/(unclosed/']\n",
      "test.yaml",
      {}
    )
    expect(result._tag).toBe("Failure")
    if (result._tag === "Failure") expect(result.failure.message).toContain("moderation.rules.bad[0]: invalid regular expression")
  })

  it("the openai provider needs an openai http account", () => {
    const result = parseConfigText(
      "groups: [{name: g, platform: openai}]\nmoderation: {provider: openai, openai: {account: nope}}\n",
      "test.yaml",
      {}
    )
    expect(result._tag === "Failure" && result.failure.message).toContain("moderation.openai.account: unknown account 'nope'")
  })
})

describe("OpenAI moderation endpoint", () => {
  let server: Server
  let url = ""
  let mode: "ok" | "hang" | "500" = "ok"
  const seen: Array<{ auth: string | undefined; body: { model: string; input: Array<string> } }> = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = ""
      req.on("data", (c: Buffer) => (raw += c.toString()))
      req.on("end", () => {
        const body = JSON.parse(raw) as { model: string; input: Array<string> }
        seen.push({ auth: req.headers.authorization, body })
        if (mode === "hang") return
        if (mode === "500") {
          res.writeHead(500, { "content-type": "application/json" }).end("{}")
          return
        }
        const results = body.input.map((text) => ({
          flagged: text.includes("hate"),
          categories: { hate: text.includes("hate"), violence: false },
          category_scores: { hate: text.includes("hate") ? 0.9 : 0.01, violence: text.includes("fight") ? 0.4 : 0.01 }
        }))
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results }))
      })
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  const account = (): Account => ({
    name: "mod",
    platform: "openai",
    kind: "http",
    baseUrl: url,
    secret: Redacted.make("sk-mod-secret"),
    groups: [],
    priority: 1,
    concurrency: 1,
    modelMapping: undefined
  })
  const options = (over: Partial<{ thresholds: Record<string, number>; on_error: "allow" | "block" }> = {}) => ({
    account: "mod",
    model: "omni-moderation-latest",
    thresholds: over.thresholds ?? { violence: 0.3 },
    timeout_ms: 300,
    on_error: over.on_error ?? ("allow" as const)
  })

  it("flags by threshold, and by the endpoint's flag for categories without one", async () => {
    mode = "ok"
    const m = makeOpenAIModeration(account(), options())
    expect(await Effect.runPromise(m.check(["a fight scene"]))).toEqual({ _tag: "Flag", category: "violence" })
    expect(await Effect.runPromise(m.check(["hate speech"]))).toEqual({ _tag: "Flag", category: "hate" })
    expect(await Effect.runPromise(m.check(["a picnic"]))).toEqual({ _tag: "Allow" })
    const last = seen.at(-1)!
    expect(last.auth).toBe("Bearer sk-mod-secret")
    expect(last.body).toEqual({ model: "omni-moderation-latest", input: ["a picnic"] })
  })

  it("a timeout fails open or closed as configured", async () => {
    mode = "hang"
    const open = makeOpenAIModeration(account(), options({ on_error: "allow" }))
    const closed = makeOpenAIModeration(account(), options({ on_error: "block" }))
    expect(await Effect.runPromise(open.check(["anything"]))).toEqual({ _tag: "Allow" })
    expect(await Effect.runPromise(closed.check(["anything"]))).toEqual({ _tag: "Flag", category: "moderation_unavailable" })
  })

  it("an error status counts as a failure, not as 'allowed'", async () => {
    mode = "500"
    const closed = makeOpenAIModeration(account(), options({ on_error: "block" }))
    expect(await Effect.runPromise(closed.check(["anything"]))).toEqual({ _tag: "Flag", category: "moderation_unavailable" })
  })

  it("decideFromResults reads every result", () => {
    expect(decideFromResults([{ categories: { sexual: false } }, { categories: { sexual: true } }], {})).toEqual({
      _tag: "Flag",
      category: "sexual"
    })
  })
})
