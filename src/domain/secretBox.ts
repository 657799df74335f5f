/**
 * Account keys an operator stores (admin API, CLI) are kept sealed with AES-256-GCM under
 * MODELGATE_SECRET_KEY, so a copy of the database alone gives no upstream credential. The sealed
 * form is `v1:<key id>:<iv>:<tag>:<ciphertext>` (base64): the key id names the secret key it was
 * sealed under, so a rotation can open the old ones with the previous key and tell which rows are
 * still to re-seal. The account's name and base URL are bound in as associated data: a sealed key
 * copied to another row, or a row whose base URL was changed behind the gateway's back, does not
 * open (the key is never sent anywhere it was not stored for). Pure.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { Redacted, Result } from "effect"

export interface SecretKey {
  /** 8 hex characters of a hash of the key: which key a sealed value needs, never the key. */
  readonly id: string
  readonly bytes: Redacted.Redacted<Buffer>
}

const VERSION = "v1"
const IV_BYTES = 12

/** How to make a usable key, said in every refusal. */
export const SECRET_KEY_HINT = "32 random bytes as 64 hex characters or base64, e.g. `openssl rand -hex 32`"

const keyId = (bytes: Buffer) => createHash("sha256").update("modelgate secret key id\u0000").update(bytes).digest("hex").slice(0, 8)

/** 32 bytes given as 64 hex characters or as base64 (standard or URL-safe, padding optional); the failure never repeats the value. */
export const parseSecretKey = (text: string, setting: string): Result.Result<SecretKey, string> => {
  const t = text.trim()
  let bytes: Buffer | undefined
  if (/^[0-9a-fA-F]{64}$/.test(t)) bytes = Buffer.from(t, "hex")
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(t)) bytes = Buffer.from(t, "base64")
  if (bytes === undefined || bytes.length !== 32) {
    return Result.fail(`${setting} must be ${SECRET_KEY_HINT} (the value set has ${t.length} characters)`)
  }
  return Result.succeed({ id: keyId(bytes), bytes: Redacted.make(bytes) })
}

/**
 * What is wrong with an account key as given (admin API, CLI), never repeating it. At least 8
 * characters: shorter secrets are not taken out of upstream error texts (redact.ts), and no
 * provider's key is that short.
 */
export const accountKeyProblem = (key: string): string | undefined =>
  key.length >= 8 && key.length <= 4096 && !/[\s\u0000-\u001f\u007f]/.test(key)
    ? undefined
    : "must be the account's key: 8 to 4096 characters, no spaces or line breaks"

/** What a sealed key is bound to: the account it was stored for and where it may be sent. */
export const accountContext = (name: string, baseUrl: string) => `modelgate account key\u0000${name}\u0000${baseUrl}`

export const seal = (key: SecretKey, plaintext: string, context: string): string => {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", Redacted.value(key.bytes), iv)
  cipher.setAAD(Buffer.from(context, "utf8"))
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return [VERSION, key.id, iv.toString("base64"), cipher.getAuthTag().toString("base64"), ciphertext.toString("base64")].join(":")
}

/** The id of the key `sealed` was sealed under; undefined for a value not in a known format. */
export const sealedKeyId = (sealed: string): string | undefined => {
  const parts = sealed.split(":")
  return parts.length === 5 && parts[0] === VERSION ? parts[1] : undefined
}

/** The plaintext, with whichever of `keys` it was sealed under; the failure says why, never what. */
export const open = (keys: ReadonlyArray<SecretKey>, sealed: string, context: string): Result.Result<Redacted.Redacted<string>, string> => {
  const [version, id, iv, tag, ciphertext] = sealed.split(":")
  if (version !== VERSION || id === undefined || iv === undefined || tag === undefined || ciphertext === undefined) {
    return Result.fail("the stored key is not in a format this modelgate knows")
  }
  const key = keys.find((k) => k.id === id)
  if (key === undefined) {
    return Result.fail(
      keys.length === 0
        ? "MODELGATE_SECRET_KEY is not set"
        : `it was stored under another MODELGATE_SECRET_KEY (key id ${id}); set that one as MODELGATE_SECRET_KEY or MODELGATE_SECRET_KEY_PREVIOUS`
    )
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", Redacted.value(key.bytes), Buffer.from(iv, "base64"))
    decipher.setAAD(Buffer.from(context, "utf8"))
    decipher.setAuthTag(Buffer.from(tag, "base64"))
    const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64")), decipher.final()]).toString("utf8")
    return Result.succeed(Redacted.make(plaintext))
  } catch {
    return Result.fail("it does not open under its key (altered, or stored for another account or base URL)")
  }
}
