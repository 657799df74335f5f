import { Schema } from "effect"

/**
 * A request the translation cannot express upstream: the client gets a 400 with this message and
 * `param` (a JSON path into its request, e.g. `input[2].content[0].image_url`).
 */
export class TranslationError extends Schema.TaggedError<TranslationError>()("TranslationError", {
  message: Schema.String,
  param: Schema.NullOr(Schema.String)
}) {}

/**
 * Request translation walks deep, nested input; throwing from the spot that finds the problem and
 * catching once at the entry point (`responsesToMessages`) keeps every helper a plain function.
 * Only TranslationError is ever caught there.
 */
export const reject = (message: string, param: string | null): never => {
  throw new TranslationError({ message, param })
}

export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)
