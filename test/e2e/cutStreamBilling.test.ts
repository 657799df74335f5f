/**
 * A stream the client leaves before the upstream reported usage is billed for its input too
 * (issue 16, item 2): input and output counted with the o200k tokenizer, not characters / 4 of the
 * output alone, and counted in modelgate_usage_estimated_total.
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import { describe, expect, it } from "@effect/vitest"
import { call, waitFor } from "../http/helpers.js"
import { fakeUpstreamGatewayForBlock } from "../support/block.js"

const KEY = "sk-test-openai-0001"

describe("a stream cut before its usage came", () => {
  const block = fakeUpstreamGatewayForBlock()

  it("is billed for its input and the output sent, in tokens", async () => {
    block.upstream.setFault({ _tag: "SlowEvents", delayMs: 40 })
    const prompt = "Summarise the history of the printing press in great detail, please. ".repeat(400)
    const controller = new AbortController()
    const res = await fetch(`${block.gw.url}/v1/responses`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5.4", input: prompt, instructions: "Be thorough.", stream: true })
    })
    const reader = res.body!.getReader()
    await reader.read()
    await reader.read()
    controller.abort()
    block.upstream.setFault(undefined)

    let input = 0
    await waitFor(async () => {
      const usage = await call(block.gw.url, "/v1/usage", { key: KEY })
      input = (usage.json as { usage: { total: { input_tokens: number } } }).usage.total.input_tokens
      return input > 0
    }, 5_000)
    // The tokenizer's count of what the request carried, not characters / 4 of the output.
    expect(input).toBe(countTokens(prompt) + countTokens("Be thorough."))
    const metrics = await call(block.gw.url, "/metrics")
    expect(metrics.text).toMatch(/^modelgate_usage_estimated_total\{group="oa"\} 1$/m)
  })
})
