/**
 * src/responses/responseScan.ts: the one-pass read of a Responses answer's top-level `model` and
 * `usage` agrees with JSON.parse wherever it answers, and declines (undefined) what it cannot read,
 * so the passthrough JSON path gives the same result either way.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { scanResponse } from "../../src/responses/responseScan.js"

const answer = {
  id: "resp_1",
  object: "response",
  model: "gpt-5.4",
  output: [{ type: "message", content: [{ type: "output_text", text: "a \"model\": \"x\", {\"usage\": 1} }" }] }],
  tools: [{ type: "function", name: "f", parameters: { properties: { model: { type: "string" }, usage: { type: "object" } } } }],
  usage: { input_tokens: 17, output_tokens: 33, input_tokens_details: { cached_tokens: 0 } },
  metadata: { model: "not-this-one" }
}

describe("scanResponse", () => {
  it("reads the top-level model and usage, not the nested keys of the same name", () => {
    expect(scanResponse(JSON.stringify(answer))).toEqual({ modelJson: "\"gpt-5.4\"", usage: answer.usage })
  })

  it("reads pretty-printed answers the same way", () => {
    expect(scanResponse(JSON.stringify(answer, null, 2))).toEqual({ modelJson: "\"gpt-5.4\"", usage: answer.usage })
  })

  it("gives the model as written, so an escaped name does not pass as the plain one", () => {
    expect(scanResponse(`{"model":"gpt\\u002d5","usage":null}`)).toEqual({ modelJson: "\"gpt\\u002d5\"", usage: undefined })
  })

  it("reports absent or non-string/non-object values as undefined", () => {
    expect(scanResponse(`{}`)).toEqual({ modelJson: undefined, usage: undefined })
    expect(scanResponse(`{"model":null,"usage":[1,2]}`)).toEqual({ modelJson: undefined, usage: undefined })
  })

  it("declines what is not a single JSON object", () => {
    for (const text of ["", "[]", "null", "{", `{"model":"x"`, `{"model":"x"} trailing`, `{"model" "x"}`, `{"a":"unterminated}`, `{"a":1,}`]) {
      expect(scanResponse(text)).toBeUndefined()
    }
  })

  it("declines an escaped key, which JSON.parse would read as one of ours", () => {
    expect(scanResponse(`{"mod\\u0065l":"gpt-5.4"}`)).toBeUndefined()
  })

  // Keys JSON.stringify writes without escapes (the scanner declines escaped keys, checked above).
  const plainKey = fc.string().filter((k) => JSON.stringify(k) === `"${k}"`)

  it("agrees with JSON.parse on any object, compact or indented", () => {
    const value = fc.jsonValue({ maxDepth: 3 })
    fc.assert(
      fc.property(
        fc.dictionary(plainKey, value),
        fc.option(fc.oneof(fc.string(), value), { nil: undefined }),
        fc.option(fc.oneof(fc.dictionary(fc.string(), value), value), { nil: undefined }),
        fc.boolean(),
        (rest, model, usage, pretty) => {
          const object: Record<string, unknown> = { ...rest }
          if (model !== undefined) object["model"] = model
          if (usage !== undefined) object["usage"] = usage
          const text = JSON.stringify(object, null, pretty ? 2 : undefined)
          const parsed = JSON.parse(text) as Record<string, unknown>
          const scanned = scanResponse(text)
          expect(scanned).toBeDefined()
          const m = parsed["model"]
          const u = parsed["usage"]
          expect(scanned?.modelJson === undefined ? undefined : JSON.parse(scanned.modelJson)).toEqual(typeof m === "string" ? m : undefined)
          expect(scanned?.usage).toEqual(typeof u === "object" && u !== null && !Array.isArray(u) ? u : undefined)
        }
      ),
      { numRuns: 500 }
    )
  })

  it("never disagrees with JSON.parse when it does answer, whatever the keys", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), (object) => {
        const text = JSON.stringify({ ...object, model: "m", usage: { input_tokens: 1 } })
        const scanned = scanResponse(text)
        if (scanned === undefined) return
        expect(scanned).toEqual({ modelJson: "\"m\"", usage: { input_tokens: 1 } })
      }),
      { numRuns: 300 }
    )
  })
})
