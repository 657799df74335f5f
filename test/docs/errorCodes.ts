/**
 * The error codes the source can produce, read from src/ by pattern: the ways a code is written
 * there (a `code` field or variable, literal or a named constant, the validators' `invalid("code", ...)`, the stream machines'
 * `fail("code", ...)`, the transport's `["code", "words"]` pairs, a Schema literal list of codes, the
 * translated stream's error-code function) and the one code built from a template (the subscription
 * windows). A new way of writing a code that none of these reads would go unnoticed, so the test
 * also fails on a `code` built from a template it does not know how to expand.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { windows } from "../../src/domain/subscription.js"

const SNAKE = String.raw`[a-z][a-z0-9]*(?:_[a-z0-9]+)*`

export interface SourceFile {
  readonly path: string
  readonly text: string
}

export const sourceFiles = (root: string): ReadonlyArray<SourceFile> => {
  const out: Array<SourceFile> = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith(".ts")) out.push({ path: relative(root, full), text: readFileSync(full, "utf8") })
    }
  }
  walk(join(root, "src"))
  return out
}

/** `const UPSTREAM_AUTH_FAILED = "upstream_auth_failed"`: named codes, by name, across src/. */
const namedConstants = (files: ReadonlyArray<SourceFile>): ReadonlyMap<string, string> =>
  new Map(files.flatMap(({ text }) =>
    [...text.matchAll(new RegExp(`\\bconst ([A-Z][A-Z0-9_]*) = "(${SNAKE})"`, "g"))].map((m) => [m[1]!, m[2]!] as const)
  ))

/**
 * On a line with a `code` field, assignment or default: its string literals (not those compared
 * against) and the named constants it uses.
 */
const onCodeLines = (text: string, constants: ReadonlyMap<string, string>): Array<string> => {
  const found: Array<string> = []
  for (const line of text.split("\n")) {
    const at = line.search(/\bcode(?:: | = | \?\? )/)
    if (at < 0) continue
    // The value ends at the first comma (or brace) after it: `code: x ? "a" : "b", param: "p"`.
    const rest = /^[^,}]*/.exec(line.slice(at))![0]
    for (const m of rest.matchAll(new RegExp(`(===|!==)?\\s*"(${SNAKE})"`, "g"))) {
      if (m[1] === undefined) found.push(m[2]!)
    }
    for (const m of rest.matchAll(/\b([A-Z][A-Z0-9_]*)\b/g)) {
      const named = constants.get(m[1]!)
      if (named !== undefined) found.push(named)
    }
  }
  return found
}

const all = (text: string, pattern: RegExp): Array<string> => [...text.matchAll(pattern)].map((m) => m[1]!)

/** The translated stream's `errorCode` function: the codes it returns, not the types it reads. */
const errorCodeFunction = (text: string): Array<string> => {
  const start = text.indexOf("const errorCode =")
  if (start < 0) return []
  const body = text.slice(start, text.indexOf("\n}", start))
  return all(body, new RegExp(`(?:return|\\?|:) "(${SNAKE})"`, "g"))
}

export interface CodeScan {
  readonly codes: ReadonlySet<string>
  /** `code` values built from a template the scan cannot expand: file and the template. */
  readonly unexpanded: ReadonlyArray<string>
}

export const scanCodes = (files: ReadonlyArray<SourceFile>): CodeScan => {
  const codes = new Set<string>()
  const unexpanded: Array<string> = []
  const constants = namedConstants(files)
  for (const { path, text } of files) {
    const add = (list: ReadonlyArray<string>) => list.forEach((c) => codes.add(c))
    add(onCodeLines(text, constants))
    add(all(text, new RegExp(`\\binvalid\\(\\s*"(${SNAKE})"`, "g")))
    add(all(text, new RegExp(`\\.fail\\(\\s*"(${SNAKE})"`, "g")))
    add(all(text, new RegExp(`\\[\\s*"(${SNAKE}_${SNAKE})",\\s*"[^"]* [^"]*"\\s*\\]`, "g")))
    for (const list of all(text, /\bcode: Schema\.Literals\(\[([^\]]*)\]/g)) add(all(list, new RegExp(`"(${SNAKE})"`, "g")))
    add(errorCodeFunction(text))
    for (const m of text.matchAll(/\bcode: `([^`]*)`/g)) {
      const template = m[1]!
      const windowed = /^\$\{w\}(_[a-z_]+)$/.exec(template)
      if (windowed !== null && text.includes("of windows")) windows.forEach((w) => codes.add(`${w}${windowed[1]}`))
      else unexpanded.push(`${path}: \`${template}\``)
    }
  }
  return { codes, unexpanded }
}
