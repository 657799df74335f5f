/**
 * A small argv parser: positional words and `--flag value` / `--flag=value` options. Enough for
 * a handful of admin commands, with errors that say which option was wrong.
 */
export interface Args {
  readonly positional: ReadonlyArray<string>
  readonly options: ReadonlyMap<string, string>
}

export class UsageError extends Error {
  override readonly name = "UsageError"
}

/** Options that are switches: present or not, no value. */
const SWITCHES = new Set(["help", "open"])

export const parseArgs = (argv: ReadonlyArray<string>): Args => {
  const positional: Array<string> = []
  const options = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith("--")) {
      positional.push(a)
      continue
    }
    const eq = a.indexOf("=")
    if (eq > 0) {
      options.set(a.slice(2, eq), a.slice(eq + 1))
      continue
    }
    const next = argv[i + 1]
    if (SWITCHES.has(a.slice(2))) options.set(a.slice(2), "true")
    else if (next === undefined || next.startsWith("--")) throw new UsageError(`${a} needs a value`)
    else {
      options.set(a.slice(2), next)
      i++
    }
  }
  return { positional, options }
}

/** The options a command accepts; anything else is a mistake worth reporting. */
export const onlyOptions = (args: Args, allowed: ReadonlyArray<string>): void => {
  for (const name of args.options.keys()) {
    if (name !== "database" && name !== "help" && !allowed.includes(name)) throw new UsageError(`unknown option --${name}`)
  }
}

export const required = (args: Args, name: string): string => {
  const v = args.options.get(name)
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`)
  return v
}
