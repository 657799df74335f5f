/**
 * Validation of a POST /v1/responses body, in the pipeline's order, with the exact messages real
 * clients and the spec expect. Pure: JSON in, a typed view or the first InvalidRequest out.
 *
 * The body is decoded with one Schema, built at module load. Only three fields can refuse a
 * request here (model, stream, previous_response_id), then the tool outputs' correlation; every
 * other field is read leniently: a value of an unexpected type shows as absent in the typed view
 * and still travels upstream untouched in `body`. The gateway forwards the client's own bytes, so
 * the decoded view is for reading, never for re-serialising.
 */
import { Effect, Exit, Predicate, Result, Schema, SchemaAST, SchemaIssue, SchemaParser } from "effect"
import { InvalidRequest } from "../../domain/errors.js"

const invalid = (code: string, message: string, param: string | null) => new InvalidRequest({ code, message, param })

// ---------------------------------------------------------------------------------------------
// Combinators
// ---------------------------------------------------------------------------------------------

/**
 * The parsers below answer with an Exit whenever they can: Schema 4 keeps a parse synchronous, a
 * plain function call, while every step answers with an Exit, and falls back to running Effects
 * (about 25x the cost on a Codex-sized body, measured) as soon as one step answers with another Effect.
 */
const ABSENT = Exit.succeed(undefined)

/** `result` as the Exit it already is, if it is one. */
const exitOf = <A, E>(result: Effect.Effect<A, E>): Exit.Exit<A, E> | undefined =>
  Exit.isExit(result) ? (result as Exit.Exit<A, E>) : undefined

/** A finished parse seen as an Exit of another success or failure type (the part it does not carry). */
const retyped = <A, E>(exit: Exit.Exit<unknown, unknown>): Exit.Exit<A, E> => exit as Exit.Exit<A, E>

/** `result`, or `undefined` where it failed. */
const orAbsent = <A>(result: Effect.Effect<A, SchemaIssue.Issue>): Effect.Effect<A | undefined> => {
  const exit = exitOf(result)
  if (exit === undefined) return Effect.orElseSucceed(result, () => undefined)
  return Exit.isSuccess(exit) ? retyped(exit) : ABSENT
}

/** The guard for a primitive keyword, so a lenient leaf costs a `typeof` rather than a parse. */
const keywordGuard = (ast: SchemaAST.AST): ((u: unknown) => boolean) | undefined => {
  if (ast.checks !== undefined) return undefined
  switch (ast._tag) {
    case "String":
      return Predicate.isString
    case "Number":
      return Predicate.isNumber
    case "Boolean":
      return Predicate.isBoolean
    default:
      return undefined
  }
}

/** A schema decoded from anything (the request's JSON), to a type the gateway reads. */
type Reader<A> = Schema.Codec<A, unknown>

/**
 * `schema` where the client's value fits it, `undefined` where it does not: never a failure.
 * For fields the gateway reads in passing and must not refuse (the upstream judges them).
 */
const lenient = <S extends Schema.Top>(schema: S): Reader<S["Type"] | undefined> =>
  Schema.declareConstructor<S["Type"] | undefined, unknown>()([schema], ([inner]) => {
    const guard = keywordGuard(inner.ast)
    if (guard !== undefined) return (u) => (guard(u) ? Exit.succeed(u as S["Type"]) : ABSENT)
    const decode = SchemaParser.decodeUnknownEffect(inner)
    return (u, _ast, options) => orAbsent(decode(u, options))
  }) as unknown as Reader<S["Type"] | undefined>

/**
 * An optional key read leniently: absent, or of the wrong type, is `undefined`. (`optionalKey`:
 * the lenient schema already takes `undefined`; `Schema.optional` would wrap it in a union.)
 */
const maybe = <S extends Schema.Top>(schema: S) => Schema.optionalKey(lenient(schema))

/** An optional key of any value, kept as is. */
const anything = Schema.optionalKey(Schema.Unknown)

/** A JSON object passed through as is (no copy): JSON Schemas, metadata. */
const JsonObject = Schema.declare(
  (u): u is { readonly [key: string]: unknown } => Predicate.isObject(u),
  { identifier: "JsonObject" }
)

/** The keys of an item or tool the gateway does not interpret, kept in its typed view. */
type Rest = { readonly [key: string]: unknown }

type Decoder<A> = (u: unknown, options?: SchemaAST.ParseOptions) => Effect.Effect<A, SchemaIssue.Issue>

/**
 * Whether every key of `decoded` holds what `u` holds there: then `u` itself is the decoded value
 * with its other keys (no copy; the view is read, never changed), as for almost every item.
 */
const sameValues = (u: Rest, decoded: object): boolean => {
  for (const key in decoded) if ((decoded as Rest)[key] !== u[key]) return false
  return true
}

/**
 * Decodes `struct`'s fields and keeps the object's other keys as they are: the value
 * `Schema.StructWithRest(fields, [Schema.Record(...)])` decodes to, without decoding each extra key.
 */
const keepingRest = <A extends object>(struct: Reader<A>): Decoder<A & Rest> => {
  const decode = SchemaParser.decodeUnknownEffect(struct)
  const withRest = (u: unknown, decoded: A, options: SchemaAST.ParseOptions | undefined) =>
    // A struct decodes only from an object: the guard is for the compiler.
    Predicate.isObject(u)
      ? Exit.succeed(sameValues(u, decoded) ? (u as A & Rest) : { ...u, ...decoded })
      : Exit.fail(new SchemaIssue.InvalidType(struct.ast, u, options))
  return (u, options) => {
    const result = decode(u, options)
    const exit = exitOf(result)
    if (exit === undefined) return Effect.flatMap(result, (decoded) => withRest(u, decoded, options))
    return Exit.isSuccess(exit) ? withRest(u, exit.value, options) : retyped(exit)
  }
}

/** An object schema whose decoded value keeps the keys `struct` does not declare. */
const open = <A extends object>(struct: Reader<A>): Reader<A & Rest> =>
  Schema.declareConstructor<A & Rest, unknown>()([struct], () => {
    const decode = keepingRest(struct)
    return (u, _ast, options) => decode(u, options)
  }) as unknown as Reader<A & Rest>

/** `Schema.Array(element)`, read from anything. */
const list = <A>(element: Reader<A>): Reader<ReadonlyArray<A>> => Schema.Array(element) as unknown as Reader<ReadonlyArray<A>>

// ---------------------------------------------------------------------------------------------
// Input items
// ---------------------------------------------------------------------------------------------

/**
 * A message: `type: "message"`, or the short form `{role, content}` without a type (chosen by
 * InputItem only when `role` is a string; a typeless object without one is unrecognized).
 */
const MessageItem = Schema.Struct({
  type: Schema.optionalKey(Schema.Literal("message")),
  id: maybe(Schema.String),
  role: maybe(Schema.String),
  /** A string or an array of content parts; the translator reads it. */
  content: anything,
  status: maybe(Schema.String)
})

const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: maybe(Schema.String),
  call_id: maybe(Schema.String),
  name: maybe(Schema.String),
  namespace: maybe(Schema.String),
  /** JSON text on the wire; some clients send an object. */
  arguments: anything
})

const CustomToolCallItem = Schema.Struct({
  type: Schema.Literal("custom_tool_call"),
  id: maybe(Schema.String),
  call_id: maybe(Schema.String),
  name: maybe(Schema.String),
  namespace: maybe(Schema.String),
  input: maybe(Schema.String)
})

/** The other call kinds that a tool output may answer (by call_id). */
const callItem = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), id: maybe(Schema.String), call_id: maybe(Schema.String) })

/** A tool's answer: `output` is a string, an array of content parts, or anything else. */
const outputItem = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), id: maybe(Schema.String), call_id: maybe(Schema.String), output: anything })

const ItemReference = Schema.Struct({ type: Schema.Literal("item_reference"), id: maybe(Schema.String) })

const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: maybe(Schema.String),
  encrypted_content: maybe(Schema.String),
  summary: anything
})

const ImageGenerationCallItem = Schema.Struct({
  type: Schema.Literal("image_generation_call"),
  id: maybe(Schema.String),
  status: maybe(Schema.String),
  /** Base64 image data: the biggest thing a history carries. */
  result: maybe(Schema.String)
})

/** Kinds the gateway knows by name but reads nothing from besides `id`. */
const otherItem = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), id: maybe(Schema.String), status: maybe(Schema.String) })

/**
 * An input element with no kind the gateway knows (an unknown or non-string `type`, neither type
 * nor string role, or not an object at all). Kept, never refused: `value` is the client's element.
 */
const UnrecognizedItem = Schema.Struct({ type: Schema.Literal("unrecognized"), value: Schema.Unknown })
type UnrecognizedItem = typeof UnrecognizedItem.Type

/** The kinds with a required `type`, each with exactly one literal. */
const TYPED_KINDS = [
  FunctionCallItem,
  outputItem("function_call_output"),
  CustomToolCallItem,
  outputItem("custom_tool_call_output"),
  callItem("tool_search_call"),
  outputItem("tool_search_output"),
  callItem("local_shell_call"),
  outputItem("local_shell_call_output"),
  callItem("mcp_tool_call"),
  outputItem("mcp_tool_call_output"),
  callItem("tool_call"),
  outputItem("computer_call_output"),
  ItemReference,
  ReasoningItem,
  ImageGenerationCallItem,
  otherItem("web_search_call"),
  otherItem("file_search_call"),
  otherItem("computer_call"),
  otherItem("code_interpreter_call"),
  otherItem("mcp_call"),
  otherItem("mcp_list_tools"),
  otherItem("mcp_approval_request"),
  otherItem("mcp_approval_response"),
  otherItem("compaction")
] as const

/** The declared fields of each kind, as decoded; the kinds are open (see `keepingRest`). */
const ItemKinds = Schema.Union([MessageItem, ...TYPED_KINDS, UnrecognizedItem])
type KnownItem = typeof MessageItem.Type | typeof TYPED_KINDS[number]["Type"]

/**
 * One element of `input`. A known kind has its declared fields decoded (a wrong type reads as
 * absent) and keeps all its other keys; anything else is an UnrecognizedItem.
 */
export type InputItem = (KnownItem & Rest) | UnrecognizedItem

const kindDecoders: ReadonlyMap<unknown, Decoder<KnownItem & Rest>> = new Map([
  ["message", keepingRest<KnownItem>(MessageItem as unknown as Reader<KnownItem>)],
  // Each kind's schema, seen as a member of the union (which it is; TS cannot map over the tuple's types).
  ...TYPED_KINDS.map((kind): [string, Decoder<KnownItem & Rest>] => [
    kind.fields.type.literal,
    keepingRest(kind as unknown as Reader<KnownItem>)
  ])
])
const decodeMessage = kindDecoders.get("message")

/** Finds an element's kind by one lookup on `type` (Schema.Union would try members and build errors). */
const decodeItem = (u: unknown, options?: SchemaAST.ParseOptions): Effect.Effect<InputItem> => {
  const unrecognized = (): InputItem => ({ type: "unrecognized", value: u })
  if (!Predicate.isObject(u)) return Exit.succeed(unrecognized())
  const type = u["type"]
  const decode = type === undefined ? (typeof u["role"] === "string" ? decodeMessage : undefined) : kindDecoders.get(type)
  if (decode === undefined) return Exit.succeed(unrecognized())
  const result = decode(u, options)
  const exit = exitOf(result)
  if (exit === undefined) return Effect.orElseSucceed(result, unrecognized)
  return Exit.isSuccess(exit) ? retyped(exit) : Exit.succeed(unrecognized())
}

/** One element of `input`, by its `type`; never fails (UnrecognizedItem takes anything). */
export const InputItem: Reader<InputItem> = Schema.declareConstructor<InputItem, unknown>()(
  [ItemKinds],
  () => (u, _ast, options) => decodeItem(u, options)
) as unknown as Reader<InputItem>

/** `input`: a string (one user message) or a list of items; anything else reads as absent. */
const Input = lenient(Schema.Union([list(InputItem), Schema.String]))

// ---------------------------------------------------------------------------------------------
// Tools and the rest of the body
// ---------------------------------------------------------------------------------------------

/** A tool definition: its kind and name; parameters, format, nested tools etc. stay in the rest. */
export const Tool = open(Schema.Struct({ type: maybe(Schema.String), name: maybe(Schema.String) }))
export type Tool = typeof Tool.Type

/** `"none" | "auto" | "required"`, or an object naming a tool or a kind of tool. */
export const ToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  open(Schema.Struct({ type: Schema.String, name: maybe(Schema.String) }))
])
export type ToolChoice = typeof ToolChoice.Type

const Reasoning = Schema.Struct({
  effort: maybe(Schema.String),
  summary: maybe(Schema.String)
})

const TextFormat = Schema.Struct({
  type: Schema.String,
  name: maybe(Schema.String),
  schema: maybe(JsonObject),
  strict: maybe(Schema.Boolean)
})

const Text = Schema.Struct({
  format: maybe(TextFormat),
  verbosity: maybe(Schema.String)
})

/**
 * The only previous_response_id HTTP can live with: null, read as absent (the upstream never sees
 * it: openaiPath.ts leaves it out). Any string, blank included, names a response HTTP does not keep.
 */
const NoPreviousResponse = Schema.Null

/**
 * The fields of a Responses create body the gateway reads. Strict, in the order of the checks:
 * model, stream, previous_response_id. Lenient: everything after them. Keys not listed are not
 * in the decoded view; they are in `body`, which is what goes upstream.
 */
export const ResponsesBody = Schema.Struct({
  model: Schema.String.check(Schema.isMinLength(1)),
  stream: Schema.optional(Schema.Boolean),
  previous_response_id: Schema.optional(NoPreviousResponse),
  input: Schema.optionalKey(Input),
  instructions: maybe(Schema.String),
  tools: maybe(list(lenient(Tool))),
  tool_choice: maybe(ToolChoice),
  parallel_tool_calls: maybe(Schema.Boolean),
  reasoning: maybe(Reasoning),
  max_output_tokens: maybe(Schema.Number),
  max_tool_calls: maybe(Schema.Number),
  temperature: maybe(Schema.Number),
  top_p: maybe(Schema.Number),
  top_logprobs: maybe(Schema.Number),
  text: maybe(Text),
  include: maybe(list(Schema.String)),
  store: maybe(Schema.Boolean),
  background: maybe(Schema.Boolean),
  metadata: maybe(JsonObject),
  prompt_cache_key: maybe(Schema.String),
  service_tier: maybe(Schema.String),
  truncation: maybe(Schema.String),
  user: maybe(Schema.String),
  safety_identifier: maybe(Schema.String),
  stream_options: maybe(JsonObject),
  /** Refused by the Messages translation (no stored state); the value does not matter here. */
  conversation: anything,
  prompt: anything
})
export type ResponsesBody = typeof ResponsesBody.Type

/**
 * `ResponsesBody`, decoded a key at a time, in the schema's order, and only for the keys the body
 * has: Schema 4's struct parser visits every declared key, present or not (27 here: ~8 µs for a
 * body of two keys, measured), while a request carries a handful. Each key's own schema decodes
 * its value, exactly as it does inside the struct; the value is the struct's, and a failure names
 * the key, as the struct's first Pointer would.
 */
const bodyFields: ReadonlyArray<readonly [key: string, optional: boolean, decode: Decoder<unknown>]> = Object.entries(
  ResponsesBody.fields
).map(([key, field]) => [key, SchemaAST.isOptional(field.ast), SchemaParser.decodeUnknownEffect(field)] as const)

const decodeBody = (json: Record<string, unknown>): Result.Result<ResponsesBody, PropertyKey> => {
  const decoded: Record<string, unknown> = {}
  for (const [key, optional, decode] of bodyFields) {
    if (!Object.hasOwn(json, key)) {
      if (optional) continue
      return Result.fail(key)
    }
    const result = decode(json[key])
    const exit = exitOf(result) ?? Effect.runSyncExit(result)
    if (Exit.isFailure(exit)) return Result.fail(key)
    decoded[key] = exit.value
  }
  // Every declared key decoded by its own schema, the required ones present: a ResponsesBody.
  return Result.succeed(decoded as ResponsesBody)
}
const decodeInput = Schema.decodeUnknownSync(Input)

export interface ResponsesRequest {
  readonly model: string
  readonly stream: boolean
  /** The whole body, for forwarding and translation; fields we do not interpret pass through. */
  readonly body: Record<string, unknown>
  /** The typed view of `body` (see ResponsesBody): what the gateway reads, never what it sends. */
  readonly decoded: ResponsesBody
}

// ---------------------------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------------------------

// The separator and the rest as message-like ids come: `msg_…`, `chatcmpl-…`, `msg_a.b`.
const MESSAGE_ID = /^(msg|message|item|chatcmpl)[_-][a-z0-9_.-]{1,256}$/

const previousResponseRefusal = (previous: unknown): InvalidRequest => {
  const id = (typeof previous === "string" ? previous : JSON.stringify(previous) ?? String(previous)).trim()
  return MESSAGE_ID.test(id.toLowerCase())
    ? invalid(
      "previous_response_id_not_response_id",
      "previous_response_id must be a response.id (resp_*), not a message id",
      "previous_response_id"
    )
    : invalid(
      "previous_response_id_unsupported",
      "previous_response_id is only supported on Responses WebSocket v2",
      "previous_response_id"
    )
}

/** The strict fields, each with the refusal its failure means. */
const refusals: Readonly<Record<PropertyKey, (body: Record<PropertyKey, unknown>) => InvalidRequest>> = {
  model: () => invalid("missing_model", "model is required", "model"),
  stream: () => invalid("invalid_stream_type", "invalid stream field type", "stream"),
  previous_response_id: (body) => previousResponseRefusal(body["previous_response_id"])
}

/** The first decoding failure (the key it failed at, in the schema's order) as the client's 400. */
const refusal = (key: PropertyKey, body: Record<PropertyKey, unknown>): InvalidRequest => {
  const refuse = refusals[key]
  if (refuse !== undefined) return refuse(body)
  // Only the strict fields can fail; reaching this is a bug in the schema, not a client error.
  throw new Error(`unexpected body decoding failure at '${String(key)}'`)
}

// ---------------------------------------------------------------------------------------------
// Tool output correlation
// ---------------------------------------------------------------------------------------------

const TOOL_CALL_TYPES = [
  "function_call",
  "custom_tool_call",
  "tool_search_call",
  "local_shell_call",
  "mcp_tool_call",
  "tool_call"
] as const
const TOOL_OUTPUT_TYPES = [
  "function_call_output",
  "custom_tool_call_output",
  "tool_search_output",
  "mcp_tool_call_output"
] as const

type ToolCallItem = Extract<InputItem, { readonly type: typeof TOOL_CALL_TYPES[number] }>
type ToolOutputItem = Extract<InputItem, { readonly type: typeof TOOL_OUTPUT_TYPES[number] }>

const toolCallTypes: ReadonlySet<InputItem["type"]> = new Set(TOOL_CALL_TYPES)
const toolOutputTypes: ReadonlySet<InputItem["type"]> = new Set(TOOL_OUTPUT_TYPES)
const isToolCall = (item: InputItem): item is ToolCallItem => toolCallTypes.has(item.type)
const isToolOutput = (item: InputItem): item is ToolOutputItem => toolOutputTypes.has(item.type)

const uncorrelated = (index: number, callId: string): InvalidRequest =>
  callId === ""
    ? invalid(
      "function_call_output_uncorrelated",
      "function_call_output requires call_id on HTTP requests; send the matching function_call item in the same input " +
        "(continuation via previous_response_id is only supported on Responses WebSocket v2)",
      `input[${index}].call_id`
    )
    : invalid(
      "function_call_output_uncorrelated",
      `function_call_output with call_id '${callId}' has no matching function_call or item_reference in input; ` +
        "send the full history on HTTP requests (continuation via previous_response_id is only supported on Responses WebSocket v2)",
      `input[${index}].call_id`
    )

/**
 * Every tool output must pair with a call in the same input (by call_id), or with an
 * `item_reference` whose id is that call_id. Over HTTP there is no stored history to pair with.
 */
const correlate = (input: ResponsesBody["input"]): Result.Result<void, InvalidRequest> => {
  if (!Array.isArray(input)) return Result.void
  const items: ReadonlyArray<InputItem> = input
  const known = new Set<string>()
  let firstOutput = -1
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!
    if (isToolCall(item)) {
      const id = item.call_id?.trim() ?? ""
      if (id !== "") known.add(id)
    } else if (item.type === "item_reference") {
      const id = item.id?.trim() ?? ""
      if (id !== "") known.add(id)
    } else if (firstOutput === -1 && isToolOutput(item)) {
      firstOutput = index
    }
  }
  if (firstOutput === -1) return Result.void
  for (let index = firstOutput; index < items.length; index++) {
    const item = items[index]!
    if (!isToolOutput(item)) continue
    const callId = item.call_id?.trim() ?? ""
    if (callId === "" || !known.has(callId)) return Result.fail(uncorrelated(index, callId))
  }
  return Result.void
}

/** The correlation check on a raw `input` value (anything; only arrays of items are checked). */
export const checkToolOutputs = (input: unknown): Result.Result<void, InvalidRequest> => correlate(decodeInput(input))

/**
 * A background response is answered `queued`, with no usage, and done upstream later: the gateway
 * could never settle what it costs, so it is refused (both Responses transports).
 */
export const backgroundRefusal = (): InvalidRequest =>
  invalid(
    "background_not_supported",
    "background mode is not supported: the gateway bills a response when it is answered; send the request without background",
    "background"
  )

export const validateResponsesBody = (json: unknown): Result.Result<ResponsesRequest, InvalidRequest> => {
  if (!Predicate.isObject(json)) return Result.fail(invalid("invalid_json", "Request body must be a JSON object", null))
  const result = decodeBody(json)
  if (Result.isFailure(result)) return Result.fail(refusal(result.failure, json))
  const decoded = result.success
  if (decoded.background === true) return Result.fail(backgroundRefusal())
  return Result.map(correlate(decoded.input), () => ({
    model: decoded.model,
    stream: decoded.stream === true,
    body: json,
    decoded
  }))
}
