/**
 * Money on the command line, exactly: USD typed by an operator is parsed as a decimal string (never
 * through a float) into micro-dollars, and micro-dollars are printed back digit for digit.
 */
import type { Micros } from "../domain/model.js"
import { UsageError } from "./args.js"

const USD = /^(\d+)(?:\.(\d{1,6}))?$/

export const parseUsd = (text: string, what: string): Micros => {
  const m = USD.exec(text.trim())
  if (m === null) throw new UsageError(`${what} must be a USD amount with at most 6 decimals, like 12.50`)
  const micros = BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0"))
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) throw new UsageError(`${what} is too large`)
  return Number(micros)
}

/** 12345678 -> "12.345678", 1500000 -> "1.50", -250000 -> "-0.25". */
export const formatUsd = (micros: Micros): string => {
  const sign = micros < 0 ? "-" : ""
  const abs = Math.abs(micros)
  const whole = Math.floor(abs / 1_000_000)
  const frac = String(abs % 1_000_000).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")
  return `${sign}${whole}.${frac}`
}
