/**
 * Our own checker of the Open Responses schema (release 2026-04-24: the `ResponseResource`, its
 * items and content parts, every streaming event, the compact resource and the WebSocket error
 * event): required fields, their types and enums, written from the spec's OpenAPI document.
 * Returns the violations, `[]` when the value conforms.
 *
 * Open on purpose where the spec is open (its stated extensibility): a discriminated value whose
 * `type` the spec does not define (an OpenAI hosted-tool item, `custom_tool_call`, another
 * annotation type, an event such as `response.custom_tool_call_input.delta`) is checked only for
 * what every such value has; every type the spec defines is checked in full. Extra keys are allowed
 * (the spec does not close its objects). One deliberate reading: the document types
 * `text.format.schema` of a json_schema format as `null`, an artefact of its generator (the request
 * takes an object and real servers echo it), so an object or null is accepted there.
 * No vitest imports, so scripts can use it too.
 */

type Check = (value: unknown, path: string, issues: Array<string>) => void
type Rec = Record<string, unknown>

const isRec = (v: unknown): v is Rec => typeof v === "object" && v !== null && !Array.isArray(v)
const show = (v: unknown): string => (v === undefined ? "undefined" : JSON.stringify(v)?.slice(0, 80) ?? String(v))

const is = (name: string, ok: (v: unknown) => boolean): Check => (v, path, issues) => {
  if (!ok(v)) issues.push(`${path}: expected ${name}, got ${show(v)}`)
}
const str = is("a string", (v) => typeof v === "string")
const int = is("an integer", (v) => Number.isInteger(v))
const num = is("a number", (v) => typeof v === "number" && Number.isFinite(v))
const bool = is("a boolean", (v) => typeof v === "boolean")
const anything: Check = () => undefined
const literal = (...values: ReadonlyArray<string>): Check => is(`one of ${values.join("|")}`, (v) => typeof v === "string" && values.includes(v))

/** The value may also be null (`anyOf [X, null]`). */
const nullable = (check: Check): Check => (v, path, issues) => {
  if (v !== null) check(v, path, issues)
}

const array = (item: Check): Check => (v, path, issues) => {
  if (!Array.isArray(v)) return void issues.push(`${path}: expected an array, got ${show(v)}`)
  v.forEach((x, i) => item(x, `${path}[${i}]`, issues))
}

/** An object: `required` keys must be present (null only where their check allows it). */
const object = (required: Readonly<Record<string, Check>>, optional: Readonly<Record<string, Check>> = {}): Check =>
(v, path, issues) => {
  if (!isRec(v)) return void issues.push(`${path}: expected an object, got ${show(v)}`)
  for (const [key, check] of Object.entries(required)) {
    if (!(key in v)) issues.push(`${path}.${key}: required, missing`)
    else check(v[key], `${path}.${key}`, issues)
  }
  for (const [key, check] of Object.entries(optional)) if (key in v) check(v[key], `${path}.${key}`, issues)
}

/** Discriminated by `type`: a type the spec defines is checked in full, another only for a string `type`. */
const byType = (variants: Readonly<Record<string, Check>>): Check => (v, path, issues) => {
  if (!isRec(v)) return void issues.push(`${path}: expected an object, got ${show(v)}`)
  const type = v["type"]
  if (typeof type !== "string") return void issues.push(`${path}.type: expected a string, got ${show(type)}`)
  variants[type]?.(v, path, issues)
}

/** The first alternative that passes, or all their complaints. */
const either = (...alternatives: ReadonlyArray<Check>): Check => (v, path, issues) => {
  const tried = alternatives.map((check) => {
    const found: Array<string> = []
    check(v, path, found)
    return found
  })
  if (!tried.some((found) => found.length === 0)) issues.push(tried.map((found) => found.join("; ")).join(" | or | "))
}

// ---------------------------------------------------------------------------------------------
// Content parts and items
// ---------------------------------------------------------------------------------------------

const TopLogProb = object({ token: str, logprob: num, bytes: array(int) })
const LogProb = object({ token: str, logprob: num, bytes: array(int), top_logprobs: array(TopLogProb) })
const Annotation = byType({
  url_citation: object({ type: str, url: str, start_index: int, end_index: int, title: str })
})

const textOnly = object({ type: str, text: str })
const OutputText = object({ type: str, text: str, annotations: array(Annotation) }, { logprobs: array(LogProb) })
const Part = byType({
  input_text: textOnly,
  output_text: OutputText,
  text: textOnly,
  summary_text: textOnly,
  reasoning_text: textOnly,
  refusal: object({ type: str, refusal: str }),
  input_image: object({ type: str, image_url: nullable(str), detail: literal("low", "high", "auto") }),
  input_file: object({ type: str }, { filename: str, file_url: str }),
  input_video: object({ type: str, video_url: str })
})

const ItemStatus = literal("in_progress", "completed", "incomplete")

export const Item: Check = byType({
  message: object({
    type: str,
    id: str,
    status: ItemStatus,
    role: literal("user", "assistant", "system", "developer"),
    content: array(Part)
  }, { phase: literal("commentary", "final_answer") }),
  function_call: object({ type: str, id: str, call_id: str, name: str, arguments: str, status: ItemStatus }),
  function_call_output: object({
    type: str,
    id: str,
    call_id: str,
    output: either(str, array(Part)),
    status: ItemStatus
  }),
  reasoning: object({ type: str, id: str, summary: array(Part) }, { content: array(Part), encrypted_content: str }),
  compaction: object({ type: str, id: str, encrypted_content: str }, { created_by: str })
})

// ---------------------------------------------------------------------------------------------
// The response object
// ---------------------------------------------------------------------------------------------

const Tool = byType({
  function: object({ type: str, name: str, description: nullable(str), parameters: nullable(object({})), strict: nullable(bool) })
})

const ToolChoiceMode = literal("none", "auto", "required")
const ToolChoice: Check = (v, path, issues) =>
  typeof v === "string" ? ToolChoiceMode(v, path, issues) : byType({
    function: object({ type: str }, { name: str }),
    allowed_tools: object({ type: str, tools: array(object({ type: literal("function") }, { name: str })), mode: ToolChoiceMode })
  })(v, path, issues)

const TextField = object({
  format: byType({
    text: object({ type: str }),
    json_object: object({ type: str }),
    json_schema: object({ type: str, name: str, description: nullable(str), schema: nullable(object({})), strict: bool })
  })
}, { verbosity: literal("low", "medium", "high") })

const Usage = object({
  input_tokens: int,
  output_tokens: int,
  total_tokens: int,
  input_tokens_details: object({ cached_tokens: int }),
  output_tokens_details: object({ reasoning_tokens: int })
})

export const ResponseResource: Check = object({
  id: str,
  object: literal("response"),
  created_at: int,
  completed_at: nullable(int),
  status: str,
  incomplete_details: nullable(object({ reason: str })),
  model: str,
  previous_response_id: nullable(str),
  instructions: nullable(str),
  output: array(Item),
  error: nullable(object({ code: str, message: str })),
  tools: array(Tool),
  tool_choice: ToolChoice,
  truncation: literal("auto", "disabled"),
  parallel_tool_calls: bool,
  text: TextField,
  top_p: num,
  presence_penalty: num,
  frequency_penalty: num,
  top_logprobs: int,
  temperature: num,
  reasoning: nullable(object({
    effort: nullable(literal("none", "low", "medium", "high", "xhigh")),
    summary: nullable(literal("concise", "detailed", "auto"))
  })),
  usage: nullable(Usage),
  max_output_tokens: nullable(int),
  max_tool_calls: nullable(int),
  store: bool,
  background: bool,
  service_tier: str,
  metadata: anything,
  safety_identifier: nullable(str),
  prompt_cache_key: nullable(str)
})

export const CompactResource: Check = object({
  id: str,
  object: literal("response.compaction"),
  output: array(Item),
  created_at: int,
  usage: Usage
})

// ---------------------------------------------------------------------------------------------
// Streaming events
// ---------------------------------------------------------------------------------------------

const event = (fields: Readonly<Record<string, Check>>, optional: Readonly<Record<string, Check>> = {}): Check =>
  object({ type: str, sequence_number: int, ...fields }, optional)

const lifecycle = event({ response: ResponseResource })
const inItem = { item_id: str, output_index: int }
const inPart = { ...inItem, content_index: int }
const inSummary = { ...inItem, summary_index: int }

const ErrorPayload = object(
  { type: str, code: nullable(str), message: str, param: nullable(str) },
  { headers: (v, path, issues) => isRec(v) ? Object.entries(v).forEach(([k, x]) => str(x, `${path}.${k}`, issues)) : issues.push(`${path}: expected an object`) }
)

export const StreamEvent: Check = byType({
  "response.created": lifecycle,
  "response.queued": lifecycle,
  "response.in_progress": lifecycle,
  "response.completed": lifecycle,
  "response.failed": lifecycle,
  "response.incomplete": lifecycle,
  "response.output_item.added": event({ output_index: int, item: nullable(Item) }),
  "response.output_item.done": event({ output_index: int, item: nullable(Item) }),
  "response.reasoning_summary_part.added": event({ ...inSummary, part: Part }),
  "response.reasoning_summary_part.done": event({ ...inSummary, part: Part }),
  "response.content_part.added": event({ ...inPart, part: Part }),
  "response.content_part.done": event({ ...inPart, part: Part }),
  "response.output_text.delta": event({ ...inPart, delta: str }, { logprobs: array(LogProb), obfuscation: str }),
  "response.output_text.done": event({ ...inPart, text: str }, { logprobs: array(LogProb) }),
  "response.refusal.delta": event({ ...inPart, delta: str }),
  "response.refusal.done": event({ ...inPart, refusal: str }),
  "response.reasoning.delta": event({ ...inPart, delta: str }, { obfuscation: str }),
  "response.reasoning.done": event({ ...inPart, text: str }),
  "response.reasoning_summary_text.delta": event({ ...inSummary, delta: str }, { obfuscation: str }),
  "response.reasoning_summary_text.done": event({ ...inSummary, text: str }),
  "response.output_text.annotation.added": event({ ...inPart, annotation_index: int, annotation: nullable(Annotation) }),
  "response.function_call_arguments.delta": event({ ...inItem, delta: str }, { obfuscation: str }),
  "response.function_call_arguments.done": event({ ...inItem, arguments: str }),
  error: event({ error: ErrorPayload })
})

/** What the WebSocket transport sends when a turn cannot run (`x-openresponses-websocket.errorMessage`). */
export const WebSocketErrorEvent: Check = object({
  type: literal("error"),
  status: int,
  error: object({ code: str, message: str }, { type: str, param: nullable(str) })
})

/** Every event of an SSE body or a WebSocket turn carries a type and a sequence number, spec'd or not. */
const anyEvent = object({ type: str, sequence_number: int })

const run = (check: Check, value: unknown, where: string): Array<string> => {
  const issues: Array<string> = []
  check(value, where, issues)
  return issues
}

export const responseIssues = (value: unknown, where = "response"): Array<string> => run(ResponseResource, value, where)
export const compactIssues = (value: unknown, where = "compact"): Array<string> => run(CompactResource, value, where)

/**
 * One event of a Responses stream. Over a WebSocket an `error` may instead be the spec's
 * WebSocketErrorEvent (a turn refused before it started has no sequence number).
 */
export const eventIssues = (value: unknown, transport: "sse" | "websocket" = "sse", where = "event"): Array<string> => {
  const issues = run(either(anyEvent, ...(transport === "websocket" ? [WebSocketErrorEvent] : [])), value, where)
  if (issues.length > 0) return issues
  if (transport === "websocket" && isRec(value) && value["type"] === "error" && !("sequence_number" in value)) return []
  return run(StreamEvent, value, `${where}(${isRec(value) ? String(value["type"]) : "?"})`)
}

/** A body of the Responses door (`response` or `response.compaction`); other JSON is not ours to judge. */
export const bodyIssues = (value: unknown): Array<string> =>
  isRec(value) && value["object"] === "response"
    ? responseIssues(value)
    : isRec(value) && value["object"] === "response.compaction"
    ? compactIssues(value)
    : []

export class SchemaViolation extends Error {}

/** Throws with every violation, so a helper that reads a body or an event fails the test that called it. */
export const assertOpenResponses = (issues: ReadonlyArray<string>, what: string): void => {
  if (issues.length > 0) {
    throw new SchemaViolation(`Open Responses schema (2026-04-24): ${what} does not conform:\n  ${issues.join("\n  ")}`)
  }
}
