/**
 * Reading the config file: YAML -> Schema decode -> cross-reference checks. A bad file fails the
 * start with one message that lists every problem by field path.
 */
import { readFileSync } from "node:fs"
import { Effect, Either, ParseResult, Schema } from "effect"
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

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc === "" ? String(p) : `${acc}.${String(p)}`), "")

export const decodeConfig = (
  raw: unknown,
  source: string,
  env: Readonly<Record<string, string | undefined>>
): Either.Either<GatewayData, ConfigError> =>
  Schema.decodeUnknownEither(GatewayConfig, { errors: "all", onExcessProperty: "error" })(raw).pipe(
    Either.mapLeft((e) =>
      new ConfigError({
        source,
        problems: ParseResult.ArrayFormatter.formatErrorSync(e).map((i) => `${formatPath(i.path) || "(root)"}: ${i.message}`)
      })
    ),
    Either.flatMap((cfg) => Either.mapLeft(resolveConfig(cfg, env), (problems) => new ConfigError({ source, problems })))
  )

export const parseConfigText = (
  text: string,
  source: string,
  env: Readonly<Record<string, string | undefined>>
): Either.Either<GatewayData, ConfigError> => {
  let raw: unknown
  try {
    raw = parseYaml(text)
  } catch (e) {
    return Either.left(new ConfigError({ source, problems: [`not valid YAML: ${(e as Error).message}`] }))
  }
  return decodeConfig(raw, source, env)
}

export const loadConfigFile = (path: string, env: Readonly<Record<string, string | undefined>>) =>
  Effect.try({
    try: () => readFileSync(path, "utf8"),
    catch: (e) => new ConfigError({ source: path, problems: [`cannot read file: ${(e as Error).message}`] })
  }).pipe(Effect.flatMap((text) => parseConfigText(text, path, env)))

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
