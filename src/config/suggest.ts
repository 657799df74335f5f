/**
 * "Did you mean …?" for a misspelt name (a config field, a LOG_LEVEL, a CLI command): the known
 * name closest to what was typed, when it is close enough to be a slip of the fingers.
 */

/** Edits from `a` to `b`: insert, delete, replace, and swapping two neighbours counts as one. */
export const editDistance = (a: string, b: string): number => {
  const rows: Array<Array<number>> = []
  for (let i = 0; i <= a.length; i++) {
    const row: Array<number> = [i]
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j)
        continue
      }
      const above = rows[i - 1]!
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      row.push(d)
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

/**
 * The candidate nearest to `typed` (case ignored) when at most about a third of it differs (one
 * edit for short names, three at most); undefined when nothing is that close, or when two
 * candidates are equally close (a guess would then be a coin toss).
 */
export const nearest = (typed: string, candidates: Iterable<string>): string | undefined => {
  const word = typed.toLowerCase()
  const allowed = Math.min(3, Math.max(1, Math.floor(word.length / 3)))
  let best: string | undefined
  let bestDistance = Infinity
  let tie = false
  for (const candidate of candidates) {
    const d = editDistance(word, candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
      tie = false
    } else if (d === bestDistance && candidate !== best) tie = true
  }
  return best !== undefined && bestDistance <= allowed && !tie ? best : undefined
}
