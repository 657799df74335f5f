/** src/translate/error.ts: TranslationError is a tagged error an Effect can fail with and catch by tag. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { reject, TranslationError } from "../../src/translate/error.js"
import { responsesToMessages } from "../../src/translate/request.js"

describe("TranslationError", () => {
  it("reject throws one with the message and param", () => {
    let caught: unknown
    try {
      reject("tools must be an array", "tools")
    } catch (e) {
      caught = e
    }
    expect(caught).toBeInstanceOf(TranslationError)
    expect(caught).toBeInstanceOf(Error)
    expect(caught).toMatchObject({ _tag: "TranslationError", message: "tools must be an array", param: "tools" })
  })

  it("responsesToMessages returns it as the Left, param null allowed", () => {
    const result = responsesToMessages({ model: "m", input: "x", tools: "nope" }, { upstreamModel: "claude-sonnet-4-5" })
    if (Result.isSuccess(result)) throw new Error("expected a TranslationError")
    expect(result.failure).toBeInstanceOf(TranslationError)
    expect([result.failure._tag, result.failure.message, result.failure.param]).toEqual(["TranslationError", "tools must be an array", "tools"])
    expect(new TranslationError({ message: "m", param: null }).param).toBeNull()
  })

  it.effect("is yieldable and caught by its tag", () =>
    Effect.gen(function*() {
      const error = new TranslationError({ message: "Unsupported reasoning.effort 'x'", param: "reasoning.effort" })
      const param = yield* Effect.gen(function*() {
        return yield* error
      }).pipe(Effect.catchTag("TranslationError", (e) => Effect.succeed(e.param)))
      expect(param).toBe("reasoning.effort")
    }))
})
