/**
 * Upstream error messages are the client's to read (a 400's own words help it fix its request),
 * but an upstream may echo what it was sent: the account's key in an Authorization header, a
 * provider key in a JSON dump. Before such a message reaches a client, the account's own secret
 * and anything shaped like a bearer token or a provider key are replaced. Pure.
 */

const REDACTED = "[redacted]"

/** Shapes of credentials, whichever account they belong to. */
const PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  // An Authorization header value, or its echo.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-) and similar provider keys.
  [/\bsk-[A-Za-z0-9_-]{12,}/g, REDACTED],
  // Google API keys.
  [/\bAIza[0-9A-Za-z_-]{30,}/g, REDACTED],
  // A key named as such: "x-api-key": "...", api_key=...
  [/((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[^\s"',}&]{6,}/gi, `$1${REDACTED}`]
]

/** `text` with `secrets` (the account's own credential) and every credential-shaped token replaced. */
export const redactSecrets = (text: string, secrets: ReadonlyArray<string> = []): string => {
  let out = text
  for (const secret of secrets) {
    // A short "secret" would blank out ordinary words; real keys are long.
    if (secret.length >= 8) out = out.split(secret).join(REDACTED)
  }
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement)
  return out
}

/** The prefix of the keys the gateway makes (store/admin/keys.ts), and such a key. */
const GATEWAY_KEY_PREFIX = "sk-mg-"
const GATEWAY_KEY = /\bsk-mg-[A-Za-z0-9_-]{16,}/g

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * For text read as it comes, mostly model output (a relayed stream's frames): `secrets` (the
 * account's credential) and gateway keys replaced, nothing else. The credential shapes of
 * `redactSecrets` would mangle ordinary answers ("HTTP Basic authentication", `api_key = ...` in
 * code). Cheap when there is nothing to find, as there almost never is: one regular expression of
 * the plain strings looked for, 0.28 µs on a 360-character frame (two `includes` took 1.1 µs).
 */
export const outputRedactor = (secrets: ReadonlyArray<string>): ((text: string) => string) => {
  const exact = secrets.filter((secret) => secret.length >= 8)
  const any = new RegExp([...exact, GATEWAY_KEY_PREFIX].map(escapeRegExp).join("|"))
  return (text) => {
    if (!any.test(text)) return text
    let out = text
    for (const secret of exact) out = out.split(secret).join(REDACTED)
    return out.replace(GATEWAY_KEY, REDACTED)
  }
}
