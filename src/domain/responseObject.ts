/**
 * The one place a Responses `response` object is written by the gateway itself: the translation's
 * (an Anthropic answer shown as a Response), and the ones it writes on its own (a stream whose
 * upstream died before or during it, a WebSocket warm-up). Each carries every field the Open
 * Responses `ResponseResource` requires (release 2026-04-24), the request's settings echoed where
 * the client gave them and the API's defaults where it did not, so strict clients (the SDKs'
 * types, Codex, the spec's compliance suite) parse every one of them alike.
 */

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isNum = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v)
const isInt = (v: unknown): v is number => Number.isInteger(v)
const isStr = (v: unknown): v is string => typeof v === "string"
const isBool = (v: unknown): v is boolean => typeof v === "boolean"
const echo = <T>(v: unknown, ok: (v: unknown) => v is T, fallback: T): T => (ok(v) ? v : fallback)

export interface ResponseFields {
  readonly id: string
  /** The model the client asked for (echoed, never the upstream alias). */
  readonly model: string
  /** Unix seconds. */
  readonly createdAt: number
  readonly status: string
  /** Unix seconds once completed; null otherwise (the spec requires the key on every snapshot). */
  readonly completedAt?: number | null
  readonly output?: ReadonlyArray<unknown>
  readonly error?: { readonly code: string; readonly message: string } | null
  readonly incompleteDetails?: { readonly reason: string } | null
  readonly usage?: unknown
  /** The client's request body, whose settings the response echoes; `{}` gives the defaults. */
  readonly request?: Record<string, unknown>
  /** The chained turn's `previous_response_id`, when the transport keeps it out of `request`. */
  readonly previousResponseId?: string
}

/** A tool as the spec lists it (a function tool with description, parameters and strict), or none. */
const echoTool = (tool: unknown): ReadonlyArray<unknown> => {
  if (!isRecord(tool) || !isStr(tool["type"])) return []
  if (tool["type"] !== "function") return [tool]
  if (!isStr(tool["name"])) return []
  return [{
    ...tool,
    description: echo(tool["description"], isStr, null),
    parameters: echo(tool["parameters"], isRecord, null),
    strict: echo(tool["strict"], isBool, null)
  }]
}

const oneOf = <T extends string>(values: ReadonlyArray<T>) => (v: unknown): v is T => typeof v === "string" && (values as ReadonlyArray<string>).includes(v)
const isToolChoice = (v: unknown): boolean => oneOf(["none", "auto", "required"])(v) || (isRecord(v) && isStr(v["type"]))
const isEffort = oneOf(["none", "low", "medium", "high", "xhigh"])
const isSummary = oneOf(["concise", "detailed", "auto"])

/** `text` with a format always; a json_schema format with its description and strict flag. */
const echoText = (text: unknown): Record<string, unknown> => {
  const t = isRecord(text) ? text : {}
  const format = t["format"]
  if (!isRecord(format) || !isStr(format["type"])) return { ...t, format: { type: "text" } }
  if (format["type"] !== "json_schema") return t
  return {
    ...t,
    format: { ...format, description: echo(format["description"], isStr, null), strict: echo(format["strict"], isBool, false) }
  }
}

export const responseObject = (f: ResponseFields): Record<string, unknown> => {
  const req = f.request ?? {}
  const reasoning = isRecord(req["reasoning"]) ? req["reasoning"] : {}
  return {
    id: f.id,
    object: "response",
    created_at: f.createdAt,
    status: f.status,
    completed_at: f.completedAt ?? null,
    model: f.model,
    output: f.output ?? [],
    error: f.error ?? null,
    incomplete_details: f.incompleteDetails ?? null,
    instructions: echo(req["instructions"], isStr, null),
    metadata: echo(req["metadata"], isRecord, {}),
    max_output_tokens: echo(req["max_output_tokens"], isInt, null),
    max_tool_calls: echo(req["max_tool_calls"], isInt, null),
    previous_response_id: f.previousResponseId ?? echo(req["previous_response_id"], isStr, null),
    parallel_tool_calls: echo(req["parallel_tool_calls"], isBool, true),
    temperature: echo(req["temperature"], isNum, 1),
    top_p: echo(req["top_p"], isNum, 1),
    presence_penalty: echo(req["presence_penalty"], isNum, 0),
    frequency_penalty: echo(req["frequency_penalty"], isNum, 0),
    top_logprobs: echo(req["top_logprobs"], isInt, 0),
    tool_choice: isToolChoice(req["tool_choice"]) ? req["tool_choice"] : "auto",
    tools: Array.isArray(req["tools"]) ? req["tools"].flatMap(echoTool) : [],
    // The spec's enums: a value outside them (a newer effort name) is reported as not known.
    reasoning: { effort: echo(reasoning["effort"], isEffort, null), summary: echo(reasoning["summary"], isSummary, null) },
    text: echoText(req["text"]),
    truncation: echo(req["truncation"], oneOf(["auto", "disabled"]), "disabled"),
    // Nothing is stored here, whatever the client asked: say so.
    store: false,
    background: false,
    service_tier: "default",
    safety_identifier: echo(req["safety_identifier"], isStr, null),
    prompt_cache_key: echo(req["prompt_cache_key"], isStr, null),
    user: echo(req["user"], isStr, null),
    usage: f.usage ?? null
  }
}
