/** src/domain/redact.ts: credentials an upstream echoed never reach a client. */
import { describe, expect, it } from "vitest"
import { outputRedactor, redactSecrets } from "../../src/domain/redact.js"

describe("redactSecrets", () => {
  it("removes the account's own key wherever it appears", () => {
    const key = "upstream-key-0123456789abcdef"
    expect(redactSecrets(`invalid header: authorization=${key}; retry with ${key}`, [key])).toBe(
      "invalid header: authorization=[redacted]; retry with [redacted]"
    )
  })

  it.each([
    ["Invalid Authorization: Bearer eyJhbGciOi.J9abcDEF-ghi_123", "Invalid Authorization: Bearer [redacted]"],
    ["bad key sk-proj-AbCdEfGhIjKlMnOpQrSt", "bad key [redacted]"],
    ["bad key sk-ant-api03-AbCdEfGhIjKlMnOp-xyz", "bad key [redacted]"],
    ["google AIzaSyA1234567890abcdefghijklmnopqrstu said no", "google [redacted] said no"],
    [`{"x-api-key": "live_123456789", "model": "m"}`, `{"x-api-key": "[redacted]", "model": "m"}`],
    ["api_key=abcdef123456&x=1", "api_key=[redacted]&x=1"]
  ])("removes a credential shape: %s", (text, expected) => {
    expect(redactSecrets(text)).toBe(expected)
  })

  it("leaves an ordinary message alone", () => {
    const text = "max_output_tokens must be at most 128000; the model 'gpt-5.4' has a context window of 400000"
    expect(redactSecrets(text, ["short"])).toBe(text)
  })
})

describe("outputRedactor", () => {
  const redact = outputRedactor(["upstream-key-0123456789abcdef", "short"])

  it("removes the account's key and gateway keys, and leaves credential-like words of an answer alone", () => {
    expect(redact("key upstream-key-0123456789abcdef and sk-mg-AbCdEfGhIjKlMnOpQrStUv_-0123456789")).toBe("key [redacted] and [redacted]")
    const answer = "HTTP Basic authentication; api_key = os.environ['KEY']; a short word"
    expect(redact(answer)).toBe(answer)
  })

  it("gives back the same string when there is nothing to remove", () => {
    const text = "an ordinary delta"
    expect(redact(text)).toBe(text)
  })
})
