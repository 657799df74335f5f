/**
 * src/domain/secretBox.ts: MODELGATE_SECRET_KEY read as hex or base64 (anything else refused
 * without repeating it), account keys sealed with AES-256-GCM so the stored form holds nothing of
 * the key, opened by the key they were sealed under (or the previous one during a rotation), and
 * not at all once altered or moved to another account or base URL.
 */
import { randomBytes } from "node:crypto"
import { Redacted, Result } from "effect"
import { describe, expect, it } from "vitest"
import { accountContext, open, parseSecretKey, seal, sealedKeyId, type SecretKey } from "../../src/domain/secretBox.js"

const keyOf = (text: string): SecretKey => Result.getOrThrowWith(parseSecretKey(text, "MODELGATE_SECRET_KEY"), (m) => new Error(m))
const ACCOUNT_KEY = "sk-upstream-account-key-0123456789"
const here = accountContext("acct", "https://api.openai.com/v1")

describe("MODELGATE_SECRET_KEY", () => {
  it("is 32 bytes as 64 hex characters or as base64, and the same bytes name the same key", () => {
    const bytes = randomBytes(32)
    const hex = keyOf(bytes.toString("hex"))
    expect(keyOf(bytes.toString("base64")).id).toBe(hex.id)
    expect(keyOf(bytes.toString("base64url")).id).toBe(hex.id)
    expect(keyOf(` ${bytes.toString("hex").toUpperCase()}\n`).id).toBe(hex.id)
    expect(hex.id).toMatch(/^[0-9a-f]{8}$/)
    expect(String(hex.bytes)).not.toContain(bytes.toString("hex").slice(0, 8))
  })

  it("anything else is refused with a sentence that never repeats the value", () => {
    for (const bad of ["hunter2-is-my-password", randomBytes(16).toString("hex"), randomBytes(31).toString("base64"), "z".repeat(64)]) {
      const parsed = parseSecretKey(bad, "MODELGATE_SECRET_KEY")
      expect(Result.isFailure(parsed)).toBe(true)
      const message = Result.isFailure(parsed) ? parsed.failure : ""
      expect(message).toContain("MODELGATE_SECRET_KEY must be 32 random bytes as 64 hex characters or base64")
      expect(message).not.toContain(bad)
    }
  })
})

describe("sealed account keys", () => {
  const current = keyOf(randomBytes(32).toString("hex"))
  const previous = keyOf(randomBytes(32).toString("base64"))

  it("hold nothing of the key, differ each time, and open to it under their key", () => {
    const a = seal(current, ACCOUNT_KEY, here)
    const b = seal(current, ACCOUNT_KEY, here)
    expect(a).not.toBe(b)
    expect(a).toMatch(/^v1:[0-9a-f]{8}:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/)
    expect(a).not.toContain(ACCOUNT_KEY)
    expect(a).not.toContain(Buffer.from(ACCOUNT_KEY).toString("base64").slice(0, 12))
    expect(sealedKeyId(a)).toBe(current.id)
    expect(Redacted.value(Result.getOrThrow(open([current], a, here)))).toBe(ACCOUNT_KEY)
  })

  it("one sealed under the previous key opens while both are given, and says which key it needs when not", () => {
    const old = seal(previous, ACCOUNT_KEY, here)
    expect(Redacted.value(Result.getOrThrow(open([current, previous], old, here)))).toBe(ACCOUNT_KEY)
    const missing = open([current], old, here)
    expect(Result.isFailure(missing) ? missing.failure : "").toContain(`key id ${previous.id}`)
    expect(Result.isFailure(open([], old, here)) ? "refused" : "opened").toBe("refused")
  })

  it("does not open once altered, or for another account or base URL", () => {
    const sealed = seal(current, ACCOUNT_KEY, here)
    const [v, id, iv, tag, ct] = sealed.split(":")
    const flipped = Buffer.from(ct!, "base64")
    flipped[0] = flipped[0]! ^ 1
    expect(Result.isFailure(open([current], [v, id, iv, tag, flipped.toString("base64")].join(":"), here))).toBe(true)
    expect(Result.isFailure(open([current], sealed, accountContext("other", "https://api.openai.com/v1")))).toBe(true)
    expect(Result.isFailure(open([current], sealed, accountContext("acct", "https://attacker.example/v1")))).toBe(true)
    expect(Result.isFailure(open([current], "sk-plain-text-key", here))).toBe(true)
  })
})
