/**
 * How deeply a JSON value nests, measured without recursion (the value may be nested deeper than
 * the JavaScript stack allows: that is what is being checked). Pure.
 */

/** The nesting limit for request bodies: real requests nest a few dozen levels at most. */
export const MAX_JSON_DEPTH = 128

/** Whether `value` nests arrays and objects deeper than `limit` levels. */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!
    if (typeof current !== "object" || current === null) continue
    if (depth > limit) return true
    if (Array.isArray(current)) {
      for (const item of current) if (typeof item === "object" && item !== null) stack.push([item, depth + 1])
    } else {
      for (const key in current) {
        const item = (current as Record<string, unknown>)[key]
        if (typeof item === "object" && item !== null) stack.push([item, depth + 1])
      }
    }
  }
  return false
}
