/**
 * Reading the config file: YAML -> Schema decode -> cross-reference checks. A bad file fails the
 * start with one message that lists every problem by field path.
 */
import { readFileSync } from "node:fs"
import { Effect, Result, Schema, SchemaIssue } from "effect"
import { parse as parseYaml } from "yaml"
import { GatewayConfig } from "../domain/config.js"
import { type GatewayData, resolveConfig } from "./resolve.js"

export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  source: Schema.String,
  problems: Schema.Array(Schema.String)
}) {
  override get message() {
    return `invalid configuration (${this.source}):\n  - ${this.problems.join("\n  - ")}`
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
/** Every issue as `{ path, message }`, one per problem (what ArrayFormatter gave on Schema 3). */
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

export const decodeConfig = (
  raw: unknown,
  source: string,
  env: Readonly<Record<string, string | undefined>>
): Result.Result<GatewayData, ConfigError> =>
  decodeGatewayConfig(raw).pipe(
    Result.mapError((e) =>
      new ConfigError({
        source,
        problems: formatIssues(e.issue).issues.map((i) => `${formatPath(i.path) || "(root)"}: ${i.message}`)
      })
    ),
    Result.flatMap((cfg) => Result.mapError(resolveConfig(cfg, env), (problems) => new ConfigError({ source, problems })))
  )

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
