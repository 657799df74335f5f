/**
 * Whether an upstream's refusal blames the account's credential or the request. Pure: read by the
 * upstream call (core/upstreamCall.ts), which turns such a 403 into `upstream_auth_failed`, and so
 * by the scheduler's verdict (services/scheduler/verdict.ts), which strikes the account for it.
 */
import type { UpstreamErrorInfo } from "./upstreamJson.js"

/** Error codes and types by which OpenAI and Anthropic say the credential itself is no good. */
const CREDENTIAL_CODES: ReadonlySet<string> = new Set([
  "invalid_api_key",
  "account_deactivated",
  "invalid_organization",
  "organization_deactivated",
  "authentication_error"
])

/**
 * The same in words, for bodies without such a code: "Incorrect API key provided: sk-...", "invalid
 * x-api-key", "Your account has been deactivated", "This organization has been disabled". Only at
 * the start of the message: upstreams echo what the request named (a model, a feature) later in
 * theirs, and a client must not be able to word a model name into a take-out.
 */
const CREDENTIAL_WORDS =
  /^\s*(?:(?:incorrect|invalid) (?:x-)?api[ -]?key\b|(?:your|this) (?:openai |anthropic )?(?:account|organi[sz]ation) (?:has been|is|was) (?:deactivated|disabled|suspended|banned)\b)/i

/**
 * Whether an upstream's refusal says the account's credential is bad rather than the request: a
 * code or type of CREDENTIAL_CODES, or a message that begins with CREDENTIAL_WORDS. Decides a 403
 * (a 401 always refuses the credential); a 403 with neither (a model or feature this project may
 * not use, an Anthropic `permission_error`, a region, a body that is not JSON) is the request's.
 */
export const credentialRefused = (info: UpstreamErrorInfo): boolean =>
  (info.code !== undefined && CREDENTIAL_CODES.has(info.code)) ||
  (info.type !== undefined && CREDENTIAL_CODES.has(info.type)) ||
  (info.message !== undefined && CREDENTIAL_WORDS.test(info.message))
