/** src/domain/upstreamJson.ts: upstream error bodies and JSON answers, decoded without ever throwing. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { decodeUpstreamError, parseUpstreamJson } from "../../src/domain/upstreamJson.js"

describe("decodeUpstreamError", () => {
  it("OpenAI shape: message, code and type", () => {
    const text = JSON.stringify({
      error: { message: "This model's maximum context length is 8192 tokens", type: "invalid_request_error", param: "input", code: "context_length_exceeded" }
    })
    expect(decodeUpstreamError(text)).toEqual({
      message: "This model's maximum context length is 8192 tokens",
      code: "context_length_exceeded",
      type: "invalid_request_error"
    })
  })

  it("OpenAI shape with code null: no code key at all", () => {
    const info = decodeUpstreamError(JSON.stringify({ error: { message: "Bad", type: "invalid_request_error", param: null, code: null } }))
    expect(info).toEqual({ message: "Bad", type: "invalid_request_error" })
    expect(Object.keys(info)).not.toContain("code")
  })

  it("Anthropic shape: message and type, no code", () => {
    const text = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" }, request_id: "req_1" })
    const info = decodeUpstreamError(text)
    expect(info).toEqual({ message: "Overloaded", type: "overloaded_error" })
    expect(Object.keys(info)).toEqual(["message", "type"])
  })

  it("not JSON, or JSON of another shape: empty fields", () => {
    for (
      const text of [
        "",
        "   ",
        "<html><body>502 Bad Gateway</body></html>",
        "{\"error\": {\"message\": \"cut of",
        "null",
        "42",
        "\"error\"",
        "[{\"error\": {\"message\": \"x\"}}]",
        "{\"message\": \"top-level only\"}",
        "{\"error\": \"a plain string\"}",
        "{\"error\": null}",
        "{\"type\": \"error\"}"
      ]
    ) {
      expect(decodeUpstreamError(text), text).toEqual({})
    }
  })

  it("fields of other types are left out, the others kept", () => {
    expect(decodeUpstreamError(JSON.stringify({ error: { message: 42, code: "rate_limit_exceeded", type: ["x"] } })))
      .toEqual({ code: "rate_limit_exceeded" })
    expect(decodeUpstreamError(JSON.stringify({ error: { message: "m", code: 429 } }))).toEqual({ message: "m" })
    expect(decodeUpstreamError(JSON.stringify({ type: "error", error: { type: null, message: { text: "m" } } }))).toEqual({})
  })

  it("huge and odd values: a 1 MB message whole, unicode intact, deep nesting without a throw", () => {
    const big = "x".repeat(1 << 20)
    expect(decodeUpstreamError(JSON.stringify({ error: { message: big } })).message).toBe(big)
    const odd = "ünïcødé \u2028 \"quoted\" \\ 🚀"
    expect(decodeUpstreamError(JSON.stringify({ error: { message: odd, code: "" } }))).toEqual({ message: odd, code: "" })
    const deep = "[".repeat(100_000) + "]".repeat(100_000)
    expect(decodeUpstreamError(deep)).toEqual({})
    expect(decodeUpstreamError(`{"error": {"message": "m", "extra": ${deep}}}`)).toEqual({ message: "m" })
  })

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((error) => JSON.stringify({ error }))), (text) => {
        const info = decodeUpstreamError(text)
        for (const value of Object.values(info)) expect(typeof value).toBe("string")
      }),
      { numRuns: 1000 }
    )
  })
})

describe("parseUpstreamJson", () => {
  it("a JSON object comes back as the object", () => {
    const answer = { id: "resp_1", object: "response", output: [{ type: "message" }], usage: { input_tokens: 1 } }
    expect(parseUpstreamJson(JSON.stringify(answer))).toEqual(Result.succeed(answer))
    expect(parseUpstreamJson("  {}\n")).toEqual(Result.succeed({}))
  })

  it("an empty answer, or one that is not JSON, is a Left saying so", () => {
    for (const text of ["", " \n"]) expect(parseUpstreamJson(text)).toEqual(Result.fail("Upstream answer was empty"))
    for (const text of ["<html>502</html>", "{\"id\": \"resp_1\",", "undefined", "{'a': 1}", "\uFEFF{}"]) {
      expect(parseUpstreamJson(text), text).toEqual(Result.fail("Upstream answer was not JSON"))
    }
  })

  it("JSON that is not an object is a Left too", () => {
    for (const text of ["null", "[]", "[{\"id\": 1}]", "\"text\"", "42", "true"]) {
      expect(parseUpstreamJson(text), text).toEqual(Result.fail("Upstream answer was not a JSON object"))
    }
  })

  it("agrees with JSON.parse on any text, and never throws", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        const result = parseUpstreamJson(text)
        let parsed: unknown
        try {
          parsed = JSON.parse(text)
        } catch {
          expect(Result.isFailure(result)).toBe(true)
          return
        }
        const isObject = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
        expect(result).toEqual(isObject ? Result.succeed(parsed) : Result.fail(expect.any(String)))
      }),
      { numRuns: 1000 }
    )
  })
})
