/**
 * The Chat Completions door read by the openai SDK on both group platforms, in front of the fake
 * upstream (OpenAI Responses and Anthropic Messages on the wire): `create`, `stream()` with
 * `finalChatCompletion()`, the usage it settled, and errors in OpenAI's envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import OpenAI from "openai"
import { startWithFakeUpstream } from "../support/gateway.js"

type Setup = Awaited<ReturnType<typeof startWithFakeUpstream>>

const GROUPS = [
  { name: "openai group", key: "sk-test-openai-0001", model: "gpt-5.4" },
  { name: "anthropic group", key: "sk-test-anthropic-0001", model: "claude-sonnet-4-5" }
] as const

describe("POST /v1/chat/completions through the openai SDK", () => {
  let setup: Setup
  beforeAll(async () => {
    setup = await startWithFakeUpstream()
  })
  afterAll(() => setup.close())

  for (const group of GROUPS) {
    describe(group.name, () => {
      const client = () => new OpenAI({ baseURL: `${setup.gw.url}/v1`, apiKey: group.key, maxRetries: 0 })

      it("answers create() with a chat.completion", async () => {
        const completion = await client().chat.completions.create({
          model: group.model,
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello" }]
        })
        expect(completion.object).toBe("chat.completion")
        expect(completion.model).toBe(group.model)
        expect(completion.choices[0]?.finish_reason).toBe("stop")
        expect(completion.choices[0]?.message.content?.length).toBeGreaterThan(0)
        expect(completion.usage?.prompt_tokens).toBeGreaterThan(0)
      })

      it("streams chunks the SDK accumulates, with usage when asked", async () => {
        const stream = client().chat.completions.stream({
          model: group.model,
          messages: [{ role: "user", content: "Say hello" }],
          stream_options: { include_usage: true }
        })
        const final = await stream.finalChatCompletion()
        expect(final.choices[0]?.message.content?.length).toBeGreaterThan(0)
        expect(final.choices[0]?.finish_reason).toBe("stop")
        expect(final.usage?.completion_tokens).toBeGreaterThan(0)
      })

      it("refuses n > 1 with a 400 naming the field, in OpenAI's envelope", async () => {
        const error = await client().chat.completions.create({ model: group.model, messages: [{ role: "user", content: "x" }], n: 2 })
          .then(() => undefined, (e: unknown) => e)
        expect(error).toBeInstanceOf(OpenAI.BadRequestError)
        expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("n")
      })
    })
  }
})
