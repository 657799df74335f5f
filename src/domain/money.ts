/**
 * Money typed by an operator, exactly: USD is parsed as a decimal string (never through a float)
 * into micro-dollars, and micro-dollars are printed back digit for digit. The CLI and the admin API
 * both read amounts through here.
 */
import { Result } from "effect"
import type { Micros } from "./model.js"

const USD = /^(\d+)(?:\.(\d{1,6}))?$/

/** "12.50" -> 12_500_000; a Failure says what is wrong with `what`. */
export const parseUsd = (text: string, what: string): Result.Result<Micros, string> => {
  const m = USD.exec(text.trim())
  if (m === null) return Result.fail(`${what} must be a USD amount with at most 6 decimals, like 12.50`)
  const micros = BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0"))
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) return Result.fail(`${what} is too large`)
  return Result.succeed(Number(micros))
}

/** 12345678 -> "12.345678", 1500000 -> "1.50", -250000 -> "-0.25". */
export const formatUsd = (micros: Micros): string => {
  const sign = micros < 0 ? "-" : ""
  const abs = Math.abs(micros)
  const whole = Math.floor(abs / 1_000_000)
  const frac = String(abs % 1_000_000).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")
  return `${sign}${whole}.${frac}`
}

/** Micro-dollars as a JSON number of USD (for display; amounts are stored and compared in micros). */
export const usdOf = (micros: Micros): number => micros / 1_000_000
