/** Statistics and plain-text formatting shared by the bench's reports (run.ts, streams.ts). */

/** The median of the finite values; NaN when there are none. */
export const median = (xs: ReadonlyArray<number>): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export const f = (x: number, digits = 2): string => (Number.isFinite(x) ? x.toFixed(digits) : "n/a")
export const fInt = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "n/a")
export const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`

/** A plain-text table; the first `textColumns` columns are left-aligned, the rest right-aligned. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, textColumns = 1): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i < textColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

/** The nearest-rank q-quantile (0 < q <= 1) of a sample; NaN when it is empty. */
export const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!
}
