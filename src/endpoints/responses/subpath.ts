/**
 * What follows `/responses` in a client's path (`/v1/responses/compact`), kept for the upstream
 * URL on the OpenAI path. A client must not steer the upstream with it: each segment, decoded
 * once, is letters, digits, `_` or `-`, at most three of them. Anything else (dot segments, encoded
 * dots, slashes or backslashes, empty segments, other characters) is a 400 before any upstream is
 * called: `/v1/responses/../chat/completions` would otherwise reach the provider as such, with the
 * account's key.
 */
import { Result } from "effect"
import { InvalidRequest } from "../../domain/errors.js"

const SEGMENT = /^[A-Za-z0-9_-]+$/
const MAX_SEGMENTS = 3

const invalid = (path: string) =>
  new InvalidRequest({
    code: "invalid_path",
    message: `Invalid path '${path.slice(0, 200)}': a responses subpath is at most ${MAX_SEGMENTS} segments of letters, digits, '_' and '-'`,
    param: null
  })

/** The subpath to forward (`""` or e.g. `/compact`) for a responses route's path, or why it is refused. */
export const responsesSubpath = (path: string): Result.Result<string, InvalidRequest> => {
  const at = path.indexOf("/responses")
  if (at < 0) return Result.succeed("")
  let rest = path.slice(at + "/responses".length)
  if (rest.endsWith("/")) rest = rest.slice(0, -1) // one trailing slash is the route itself
  if (rest === "") return Result.succeed("")
  const segments = rest.slice(1).split("/")
  if (segments.length > MAX_SEGMENTS) return Result.fail(invalid(path))
  const decoded: Array<string> = []
  for (const segment of segments) {
    let value: string
    try {
      value = decodeURIComponent(segment)
    } catch {
      return Result.fail(invalid(path))
    }
    if (!SEGMENT.test(value)) return Result.fail(invalid(path))
    decoded.push(value)
  }
  return Result.succeed(`/${decoded.join("/")}`)
}

/**
 * Whether a subpath is the compact endpoint (`POST /responses/compact`): answered in JSON (the spec's
 * compact endpoint has no stream), and by a summarising call on a Messages group.
 */
export const isCompaction = (subpath: string): boolean => subpath.toLowerCase() === "/compact"
