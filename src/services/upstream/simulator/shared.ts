/**
 * Small pure helpers shared by the Responses and Messages simulators: request inspection,
 * deterministic ids, token estimates and delta chunking. Nothing here touches the clock or the network.
 */
import { createHash } from "node:crypto"
import { newId } from "../../../domain/ids.js"

export type JsonObject = Record<string, unknown>

export type IdPrefix = "resp" | "msg" | "fc" | "rs" | "call" | "toolu"

export interface SimulateOptions {
  /**
   * Unix seconds for `created_at` / `completed_at` (Responses; Messages has no time field).
   * Required by `simulateResponses`: the caller reads it from its Clock, so output is byte-identical for a given time.
   */
  readonly createdAt?: number
  /**
   * Use fresh random ids (`newId`) instead of ids derived from a hash of the request. Simulator
   * accounts do (two identical requests are two answers); the default keeps a function of the
   * request, so tests can compare answers given on different paths (HTTP and WebSocket, direct and
   * through the gateway) id for id.
   */
  readonly randomIds?: boolean
}

export interface Simulated {
  /** The complete non-streaming answer body. */
  readonly json: Record<string, unknown>
  /** The exact streaming event sequence (each element is one SSE `data:` payload). */
  readonly events: ReadonlyArray<Record<string, unknown>>
}

export const isRecord = (u: unknown): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

export const asArray = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

export const asString = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

export const asNumber = (u: unknown): number | undefined =>
  typeof u === "number" && Number.isFinite(u) ? u : undefined

/** Stable-ish serialisation (JSON.stringify; `undefined` becomes ""). */
export const serialise = (u: unknown): string => JSON.stringify(u) ?? ""

/**
 * The id seed of a request: everything but the transport flags, so the streamed and JSON answers
 * share ids, and but the prompt cache's name, which changes where a request is cached, not what it
 * asks.
 */
export const requestSeed = (body: JsonObject): string => {
  const { prompt_cache_key: _cacheKey, stream: _stream, stream_options: _streamOptions, ...rest } = body
  return serialise(rest)
}

/** A deterministic token estimate: ceil(chars / 4). */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

/**
 * Id factory. Deterministic mode hashes the request with the prefix and a per-prefix counter,
 * so the same request always yields the same ids and different requests (almost surely) different ones.
 */
export const idFactory = (seed: string, random: boolean): ((prefix: IdPrefix) => string) => {
  const counters = new Map<IdPrefix, number>()
  return (prefix) => {
    if (random) return newId(prefix)
    const n = counters.get(prefix) ?? 0
    counters.set(prefix, n + 1)
    const hex = createHash("sha256").update(`${prefix}:${n}:${seed}`).digest("hex").slice(0, 24)
    return `${prefix}_${hex}`
  }
}

export const hashBase64 = (text: string): string => createHash("sha256").update(text).digest("base64")

/** Collapses whitespace and keeps the first `max` characters. */
export const snippet = (text: string, max = 60): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? flat.slice(0, max) : flat
}

/**
 * Splits text into deltas of `wordsPerDelta` words; whitespace stays attached, so the pieces
 * concatenate back to exactly `text`. Empty text gives no pieces (no empty deltas are ever sent).
 */
export const wordChunks = (text: string, wordsPerDelta = 3): ReadonlyArray<string> => {
  const words = text.match(/\s+|\S+\s*/g) ?? []
  const out: Array<string> = []
  for (let i = 0; i < words.length; i += wordsPerDelta) {
    out.push(words.slice(i, i + wordsPerDelta).join(""))
  }
  return out
}

/** Splits a string into at most `parts` non-empty pieces of nearly equal length. */
export const evenChunks = (text: string, parts = 3): ReadonlyArray<string> => {
  if (text.length === 0) return []
  const size = Math.ceil(text.length / Math.min(parts, text.length))
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** A small sample value for a JSON schema (a structured-output answer): each property gets a value of its declared type. */
export const sampleFromSchema = (schema: unknown, depth = 0): unknown => {
  if (!isRecord(schema)) return "simulated"
  const enumValues = asArray(schema["enum"])
  if (enumValues.length > 0) return enumValues[0]
  if ("const" in schema) return schema["const"]
  const rawType = schema["type"]
  const type = Array.isArray(rawType) ? asString(rawType.find((t) => t !== "null")) : asString(rawType)
  switch (type) {
    case "string":
      return "simulated"
    case "number":
    case "integer":
      return 1
    case "boolean":
      return true
    case "null":
      return null
    case "array":
      return []
    case "object":
    case undefined: {
      const properties = schema["properties"]
      if (!isRecord(properties)) return type === "object" ? {} : "simulated"
      const out: JsonObject = {}
      for (const [key, sub] of Object.entries(properties)) {
        out[key] = depth >= 3 ? "simulated" : sampleFromSchema(sub, depth + 1)
      }
      return out
    }
    default:
      return "simulated"
  }
}

/** Concatenates the text of a content value: a string, or an array of parts carrying `text`. */
export const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  return asArray(content)
    .map((part) => {
      if (typeof part === "string") return part
      if (!isRecord(part)) return ""
      const text = asString(part["text"])
      if (text !== undefined) return text
      // Anthropic tool_result blocks nest their content.
      if (part["type"] === "tool_result") return contentText(part["content"])
      return ""
    })
    .filter((t) => t.length > 0)
    .join(" ")
}

export const answerText = (userText: string): string =>
  `Simulated answer to: "${snippet(userText) || "(empty)"}". This reply comes from the modelgate simulator.`

export const toolResultAnswerText = (output: string): string =>
  `Simulated answer using the tool result: "${snippet(output) || "(empty)"}". The simulator has finished the task.`
