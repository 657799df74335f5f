/** The usage report as CSV (RFC 4180: a header line, CRLF line ends, fields quoted when they need it). */
import { formatUsd } from "../domain/money.js"
import type { UsageDimension, UsageRow } from "../store/admin/usage.js"

const quoted = (value: string): string => `"${value.replaceAll("\"", "\"\"")}"`

/**
 * A text cell. Its content can come from a client (a model name), and a spreadsheet runs a cell
 * that starts with = + - @ tab or CR as a formula: such a cell gets a leading ' and is quoted,
 * as OWASP's CSV injection advice says, so it reads as the text it was.
 */
const textField = (value: string): string =>
  /^[=+\-@\t\r]/.test(value) ? quoted(`'${value}`) : /[",\r\n]/.test(value) ? quoted(value) : value

export const usageCsv = (by: UsageDimension, rows: ReadonlyArray<UsageRow>): string => {
  const lines = [[by, "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"].join(",")]
  for (const r of rows) {
    // Only the bucket is text; the rest are numbers we format (a negative cost stays a number).
    lines.push([
      textField(r.bucket),
      String(r.requests),
      String(r.input_tokens),
      String(r.output_tokens),
      String(r.cache_read_tokens),
      String(r.cache_creation_tokens),
      formatUsd(r.cost_micros)
    ].join(","))
  }
  return `${lines.join("\r\n")}\r\n`
}
