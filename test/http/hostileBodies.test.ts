/**
 * Nothing a client puts in its body is a 500 (issue 16, item 7): arbitrary JSON values, field
 * types and nestings, thrown at the responses path of both platforms over a real socket, get an
 * answer below 500, and every 4xx is the error envelope. Nesting far past any real request (8,000
 * levels, which overflowed the stack while serialising) is a 400 invalid_json.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { startGateway, type TestGateway } from "../support/gateway.js"
import { postResponses } from "./helpers.js"

const KEYS = { openai: "sk-hostile-openai-0001", anthropic: "sk-hostile-anthropic-01" } as const

const config = {
  groups: [
    { name: "oa", platform: "openai", models: ["gpt-5.4"] },
    { name: "an", platform: "anthropic", models: ["claude-sonnet-4-6"] }
  ],
  users: [{ name: "alice", balance_usd: 1_000, concurrency: 50 }],
  keys: [
    { key: KEYS.openai, user: "alice", group: "oa" },
    { key: KEYS.anthropic, user: "alice", group: "an" }
  ],
  accounts: [
    { name: "sim-oa", platform: "openai", kind: "simulator", groups: ["oa"] },
    { name: "sim-an", platform: "anthropic", kind: "simulator", groups: ["an"] }
  ]
}

/** `depth` arrays around `leaf`, as JSON text (JSON.stringify itself overflows at such depths). */
const nested = (depth: number, leaf: string): string => `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}`

/** A body with a valid model and anything else, so that it gets past the first checks. */
const bodyWith = (model: string) =>
  fc.record({
    model: fc.constant(model),
    input: fc.oneof(fc.string(), fc.jsonValue(), fc.array(fc.record({ type: fc.string(), content: fc.jsonValue(), role: fc.jsonValue() }, { requiredKeys: [] }))),
    tools: fc.oneof(fc.jsonValue(), fc.array(fc.record({ type: fc.constantFrom("function", "image_generation", "custom"), name: fc.jsonValue(), parameters: fc.jsonValue() }, { requiredKeys: [] }))),
    tool_choice: fc.jsonValue(),
    instructions: fc.jsonValue(),
    stream: fc.oneof(fc.boolean(), fc.jsonValue()),
    previous_response_id: fc.oneof(fc.constant(undefined), fc.jsonValue()),
    reasoning: fc.jsonValue(),
    max_output_tokens: fc.jsonValue(),
    metadata: fc.jsonValue()
  }, { requiredKeys: ["model"] })

const expectAnswered = async (url: string, key: string, body: unknown) => {
  const res = await postResponses(url, key, typeof body === "string" ? body : JSON.stringify(body))
  expect(res.status, res.text.slice(0, 300)).toBeLessThan(500)
  if (res.status >= 400) {
    const error = (res.json as { error?: { type?: unknown; code?: unknown; message?: unknown } } | undefined)?.error
    expect(typeof error?.type).toBe("string")
    expect(typeof error?.code).toBe("string")
    expect(typeof error?.message).toBe("string")
  }
  return res
}

describe("hostile request bodies", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ config })
  })
  afterAll(() => gw.close())

  it.each([["openai", "gpt-5.4"], ["anthropic", "claude-sonnet-4-6"]] as const)(
    "%s: nesting of 8,000 levels in input content or tools is a 400 invalid_json",
    async (platform, model) => {
      for (const body of [
        `{"model":"${model}","input":[{"role":"user","content":${nested(8_000, `"deep"`)}}]}`,
        `{"model":"${model}","input":"hi","tools":[{"type":"function","name":"f","parameters":${nested(8_000, "{}")}}]}`
      ]) {
        const res = await expectAnswered(gw.url, KEYS[platform], body)
        expect(res.status).toBe(400)
        expect((res.json as { error: { code: string } }).error.code).toBe("invalid_json")
      }
      // A real request's nesting (well under the limit) is served.
      const fine = await expectAnswered(gw.url, KEYS[platform], { model, input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }] })
      expect(fine.status).toBe(200)
    }
  )

  it.each([["openai", "gpt-5.4"], ["anthropic", "claude-sonnet-4-6"]] as const)(
    "%s: arbitrary JSON values and field types never get a 5xx",
    async (platform, model) => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue(), bodyWith(model)), (body) => expectAnswered(gw.url, KEYS[platform], body).then(() => true)),
        { numRuns: 150 }
      )
    },
    60_000
  )
})
