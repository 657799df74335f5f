/**
 * The embedded moderation rules as patterns: a phrase matches case-insensitively on word
 * boundaries (so "kill" does not flag "skill"); `/regex/flags` is a regular expression. Pure: the
 * config check at start (`ruleProblems`) and the rules Moderation share it.
 */

const REGEX_RULE = /^\/(.+)\/([a-z]*)$/s

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Compiles one rule; throws on an invalid regular expression (config is checked at start). */
export const compileRule = (rule: string): RegExp => {
  const m = REGEX_RULE.exec(rule)
  if (m) return new RegExp(m[1]!, m[2]!.replace(/[gy]/g, ""))
  const phrase = escape(rule.trim()).replace(/\s+/g, "\\s+")
  // \b only works next to word characters; phrases may start or end with punctuation.
  const start = /^\w/.test(rule.trim()) ? "\\b" : ""
  const end = /\w$/.test(rule.trim()) ? "\\b" : ""
  return new RegExp(`${start}${phrase}${end}`, "iu")
}

/** Problems with a rules table, by category and index, for the config check at start. */
export const ruleProblems = (rules: Readonly<Record<string, ReadonlyArray<string>>>): Array<string> => {
  const problems: Array<string> = []
  for (const [category, list] of Object.entries(rules)) {
    list.forEach((rule, i) => {
      if (rule.trim() === "") problems.push(`moderation.rules.${category}[${i}]: empty rule`)
      else {
        try {
          compileRule(rule)
        } catch (e) {
          problems.push(`moderation.rules.${category}[${i}]: invalid regular expression (${(e as Error).message})`)
        }
      }
    })
  }
  return problems
}
