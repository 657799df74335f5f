/** src/endpoints/responses/subpath.ts: which responses subpaths reach an upstream, and which are refused. */
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { responsesSubpath } from "../../src/endpoints/responses/subpath.js"

const refused = (path: string) => {
  const result = responsesSubpath(path)
  expect(Result.isFailure(result), path).toBe(true)
  if (Result.isFailure(result)) expect(result.failure).toMatchObject({ code: "invalid_path", param: null })
}

describe("responses subpaths", () => {
  it.each([
    ["/v1/responses", ""],
    ["/v1/responses/", ""],
    ["/responses/compact", "/compact"],
    ["/backend-api/codex/responses/compact", "/compact"],
    ["/v1/responses/a_b-c/D9/x", "/a_b-c/D9/x"],
    ["/v1/responses/%63ompact", "/compact"]
  ])("%s is forwarded as '%s'", (path, subpath) => {
    expect(responsesSubpath(path)).toEqual(Result.succeed(subpath))
  })

  it.each([
    "/v1/responses/../chat/completions",
    "/v1/responses/./compact",
    "/v1/responses/%2e%2e/chat/completions",
    "/v1/responses/%2E%2E",
    "/v1/responses/a%2fb",
    "/v1/responses/a%5cb",
    "/v1/responses/a\\b",
    "/v1/responses//compact",
    "/v1/responses/compact//",
    "/v1/responses/a/b/c/d",
    "/v1/responses/%zz",
    "/v1/responses/%252e%252e",
    "/v1/responses/comp act",
    "/v1/responses/compact.json",
    "/v1/responses/ünï"
  ])("%s is refused", refused)
})
