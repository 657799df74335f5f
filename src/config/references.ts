/**
 * A config file's references by name (a key's user and group, an account's groups, a
 * subscription's user and group, the moderation account) checked against the names the file
 * declares. Read loosely, from the file as parsed: a file whose values do not all decode (a
 * misspelt platform, a balance that is no number) still has its references checked, so one run
 * reports both. Entries too broken to name anything are left to the schema's report.
 */

const record = (u: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : undefined

const entries = (file: Readonly<Record<string, unknown>>, section: string): ReadonlyArray<Readonly<Record<string, unknown>> | undefined> => {
  const list = file[section]
  return Array.isArray(list) ? list.map(record) : []
}

const names = (file: Readonly<Record<string, unknown>>, section: string): ReadonlySet<string> =>
  new Set(entries(file, section).flatMap((e) => (typeof e?.["name"] === "string" ? [e["name"]] : [])))

/** `at: unknown <what> '<name>'` for each reference to a name the file does not declare, in file order. */
export const referenceProblems = (parsed: unknown): Array<string> => {
  const file = record(parsed)
  if (file === undefined) return []
  const groups = names(file, "groups")
  const users = names(file, "users")
  const accounts = names(file, "accounts")
  const problems: Array<string> = []
  const check = (at: string, value: unknown, known: ReadonlySet<string>, what: string) => {
    if (typeof value === "string" && value !== "" && !known.has(value)) problems.push(`${at}: unknown ${what} '${value}'`)
  }
  entries(file, "keys").forEach((k, i) => {
    check(`keys[${i}].user`, k?.["user"], users, "user")
    check(`keys[${i}].group`, k?.["group"], groups, "group")
  })
  entries(file, "accounts").forEach((a, i) => {
    const list = a?.["groups"]
    if (Array.isArray(list)) list.forEach((g, j) => check(`accounts[${i}].groups[${j}]`, g, groups, "group"))
  })
  const moderation = record(file["moderation"])
  if (moderation?.["provider"] === "openai") {
    check("moderation.openai.account", record(moderation["openai"])?.["account"], accounts, "account")
  }
  entries(file, "subscriptions").forEach((s, i) => {
    check(`subscriptions[${i}].user`, s?.["user"], users, "user")
    check(`subscriptions[${i}].group`, s?.["group"], groups, "group")
  })
  return problems
}
