/**
 * Reading the config file: YAML -> Schema decode -> cross-reference checks. A bad file fails the
 * start with one message that lists every problem by field path: every field the schema refuses
 * (a misspelt field name with the name it was probably meant to be, a value off by a letter), then
 * its references to names it does not declare, so one run shows them all. When the file decodes
 * once the unknown fields are left out, the other cross-field problems come too (resolve.ts).
 */
import { readFileSync } from "node:fs"
import { Effect, Result, Schema, SchemaAST, SchemaIssue } from "effect"
import { parse as parseYaml } from "yaml"
import { GatewayConfig } from "../domain/config.js"
import { referenceProblems } from "./references.js"
import { type GatewayData, resolveConfig } from "./resolve.js"
import { nearest } from "./suggest.js"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  source: Schema.String,
  problems: Schema.Array(Schema.String)
}) {
  override get message() {
    const count = this.problems.length === 1 ? "1 problem" : `${this.problems.length} problems`
    return `invalid configuration in ${this.source} (${count}):\n  - ${this.problems.join("\n  - ")}`
  }
}

type PathSegment = PropertyKey | { readonly key: PropertyKey }

const formatPath = (path: ReadonlyArray<PathSegment> | undefined): string =>
  (path ?? []).reduce<string>((acc, s) => {
    const p = typeof s === "object" ? s.key : s
    return typeof p === "number" ? `${acc}[${p}]` : acc === "" ? String(p) : `${acc}.${String(p)}`
  }, "")

// reportInput: each problem says what was found, as Schema 3's messages did ("Expected …, got …").
const decodeGatewayConfig = Schema.decodeUnknownResult(GatewayConfig, { errors: "all", onExcessProperty: "error", reportInput: true })
/** The same, with unknown fields left out: to find the cross-reference problems of a file that also has misspelt fields. */
const decodeIgnoringUnknown = Schema.decodeUnknownResult(GatewayConfig, { errors: "all", onExcessProperty: "ignore" })

/** Marks an unknown field's message; the field names allowed there follow it (a leaf has no path, the formatter adds it). */
const UNKNOWN_FIELD = "\u0000unknown field\u0000"

/** Schema's own messages, and for an unknown field the names of the fields allowed there. */
const leafHook: SchemaIssue.LeafHook = (issue) =>
  issue._tag === "UnexpectedKey" && SchemaAST.isObjects(issue.ast)
    ? UNKNOWN_FIELD + issue.ast.propertySignatures.map((p) => String(p.name)).join(",")
    : SchemaIssue.defaultLeafHook(issue)

/** `Expected "http" | "simulator", got "htp"`: a union of literals is formatted whole, without the leaf hook. */
const literalChoice = /^Expected ((?:"[^"]*"(?: \| )?)+), got "([^"]*)"$/

/** The message, with the value it was probably meant to be when a string is one letter or two off a choice. */
const withGuess = (message: string): string => {
  const choice = literalChoice.exec(message)
  if (choice === null) return message
  const guess = nearest(choice[2]!, [...choice[1]!.matchAll(/"([^"]*)"/g)].map((m) => m[1]!))
  return guess === undefined ? message : `${message}; did you mean '${guess}'?`
}
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook })

const problemText = (issue: { readonly path?: ReadonlyArray<PathSegment> | undefined; readonly message: string }): string => {
  const at = formatPath(issue.path) || "(root)"
  if (!issue.message.startsWith(UNKNOWN_FIELD)) return `${at}: ${withGuess(issue.message)}`
  const fields = issue.message.slice(UNKNOWN_FIELD.length).split(",")
  const last = issue.path?.[issue.path.length - 1]
  const typed = String(typeof last === "object" ? last.key : last)
  const guess = nearest(typed, fields)
  return guess === undefined
    ? `${at}: unknown field '${typed}' (the fields here: ${fields.join(", ")})`
    : `${at}: unknown field '${typed}'; did you mean '${guess}'?`
}

export const decodeConfig = (
  raw: unknown,
  source: string,
  env: Readonly<Record<string, string | undefined>>
): Result.Result<GatewayData, ConfigError> => {
  const decoded = decodeGatewayConfig(raw)
  if (Result.isSuccess(decoded)) {
    return Result.mapError(resolveConfig(decoded.success, env), (problems) => new ConfigError({ source, problems }))
  }
  const problems = formatIssues(decoded.failure.issue).issues.map(problemText)
  // Misspelt fields only: the rest of the file is whole, so its references can be checked in the same run.
  const lenient = decodeIgnoringUnknown(raw)
  if (Result.isSuccess(lenient)) {
    const references = resolveConfig(lenient.success, env)
    if (Result.isFailure(references)) problems.push(...references.failure)
  } else {
    // A value the schema refuses: the references are still checked, on the file as written.
    problems.push(...referenceProblems(raw))
  }
  return Result.fail(new ConfigError({ source, problems }))
}

export const parseConfigText = (
  text: string,
  source: string,
  env: Readonly<Record<string, string | undefined>>
): Result.Result<GatewayData, ConfigError> => {
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (e) {
    return Result.fail(new ConfigError({ source, problems: [`not valid YAML: ${(e as Error).message}`] }))
  }
  return decodeConfig(raw, source, env)
}

export const loadConfigFile = (path: string, env: Readonly<Record<string, string | undefined>>) =>
  Effect.try({
    try: () => readFileSync(path, "utf8"),
    catch: (e) => new ConfigError({ source: path, problems: [`cannot read file: ${(e as Error).message}`] })
  }).pipe(Effect.flatMap((text) => Effect.fromResult(parseConfigText(text, path, env))))

/** `--config <path>` or `--config=<path>` on the command line wins over MODELGATE_CONFIG. */
export const configPathFrom = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === "--config") return argv[i + 1]
    if (a.startsWith("--config=")) return a.slice("--config=".length)
  }
  const fromEnv = env["MODELGATE_CONFIG"]
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv
}
