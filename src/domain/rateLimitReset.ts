/**
 * When does an upstream rate limit lift? Read from the 429's headers, the way OpenAI and Anthropic
 * send them. Pure; times are milliseconds from `now`.
 *
 * The order matters, and it is what keeps a short burst from being treated as an exhausted window:
 * 1. `retry-after-ms` / `retry-after`: the upstream said when to come back; believe it.
 * 2. Per-window reset headers (`x-ratelimit-reset-*`, `anthropic-ratelimit-*-reset`): only windows
 *    reported exhausted (remaining 0, or unified status `rejected`) hold the account back, until the
 *    last of them resets. OpenAI's token reset is when the bucket is *full* again, often minutes away
 *    while a retry works in seconds, so a window that still has room never sets a long cooldown.
 * 3. Windows present but none marked exhausted: the soonest reset.
 * 4. Nothing: undefined (the caller applies its short default).
 */

type HeaderBag = Readonly<Record<string, string>>

const DURATION = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/

/**
 * One reset value as providers write it: a Go-style duration (`1s`, `6m0s`, `20ms`, `1h2m`), plain
 * seconds, epoch seconds or milliseconds, or a date (RFC 3339 or HTTP-date). Milliseconds from now.
 */
export const parseResetValue = (raw: string, now: number): number | undefined => {
  const value = raw.trim()
  if (value === "") return undefined
  if (/^\d+(?:\.\d+)?$/.test(value)) {
    const n = Number(value)
    if (n > 1e12) return Math.max(0, n - now) // epoch milliseconds
    if (n > 1e9) return Math.max(0, n * 1000 - now) // epoch seconds
    return n * 1000 // seconds from now
  }
  const d = DURATION.exec(value)
  if (d !== null && value !== "") {
    const [, h, m, s, ms] = d
    return Number(h ?? 0) * 3_600_000 + Number(m ?? 0) * 60_000 + Number(s ?? 0) * 1000 + Number(ms ?? 0)
  }
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** `retry-after-ms`, else `retry-after` (seconds or an HTTP date). */
export const retryAfterMillis = (headers: HeaderBag, now: number): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && /^\d+(?:\.\d+)?$/.test(ms.trim())) return Number(ms)
  const ra = headers["retry-after"]
  if (ra === undefined) return undefined
  const v = ra.trim()
  if (/^\d+(?:\.\d+)?$/.test(v)) return Number(v) * 1000
  const date = Date.parse(v)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

interface Window {
  readonly resetMillis: number
  readonly exhausted: boolean
}

const OPENAI_RESET = /^x-ratelimit-reset(?:-(.+))?$/
const ANTHROPIC_RESET = /^anthropic-ratelimit-(.+)-reset$/

/** Every rate-limit window the headers describe, with whether it is used up. */
const windowsOf = (headers: HeaderBag, now: number): Array<Window> => {
  const out: Array<Window> = []
  for (const name in headers) {
    const value = headers[name]
    if (value === undefined) continue
    let exhaustedBy: string | undefined
    let statusName: string | undefined
    const openai = OPENAI_RESET.exec(name)
    if (openai !== null) {
      exhaustedBy = openai[1] === undefined ? "x-ratelimit-remaining" : `x-ratelimit-remaining-${openai[1]}`
    } else {
      const anthropic = ANTHROPIC_RESET.exec(name)
      if (anthropic === null) continue
      const window = anthropic[1] ?? ""
      exhaustedBy = `anthropic-ratelimit-${window}-remaining`
      // The unified (subscription) windows report a status instead of a remaining count.
      if (window.startsWith("unified")) statusName = `anthropic-ratelimit-${window}-status`
    }
    const resetMillis = parseResetValue(value, now)
    if (resetMillis === undefined) continue
    const remaining = headers[exhaustedBy]?.trim()
    const status = statusName === undefined ? undefined : headers[statusName]?.trim().toLowerCase()
    out.push({ resetMillis, exhausted: remaining === "0" || status === "rejected" })
  }
  return out
}

/** How long until the account may be asked again, as far as the headers tell; see the module doc. */
export const rateLimitResetMillis = (headers: HeaderBag, now: number): number | undefined => {
  const explicit = retryAfterMillis(headers, now)
  if (explicit !== undefined) return explicit
  const windows = windowsOf(headers, now)
  if (windows.length === 0) return undefined
  const exhausted = windows.filter((w) => w.exhausted)
  return exhausted.length > 0
    ? Math.max(...exhausted.map((w) => w.resetMillis))
    : Math.min(...windows.map((w) => w.resetMillis))
}
