/** The usage report as CSV (RFC 4180: a header line, CRLF line ends, fields quoted when they need it). */
import { formatUsd } from "../domain/money.js"
import type { UsageDimension, UsageRow } from "../store/admin/usage.js"

const field = (value: string): string => (/[",\r\n]/.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value)

export const usageCsv = (by: UsageDimension, rows: ReadonlyArray<UsageRow>): string => {
  const lines = [[by, "requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"].join(",")]
  for (const r of rows) {
    lines.push([
      field(r.bucket),
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
