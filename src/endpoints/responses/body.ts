/**
 * The Responses create body as one Schema: the input items by kind, tools, and the fields the gateway
 * reads; every other field stays in the body untouched. validate.ts holds the rules over it.
 */
import { Effect, Exit, Predicate, Result, Schema, SchemaAST, SchemaParser } from "effect"
import { anything, type Decoder, exitOf, JsonObject, keepingRest, lenient, list, maybe, open, type Reader, type Rest, retyped } from "./bodyReaders.js"

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
  ["message", keepingRest<KnownItem>(MessageItem as Reader<KnownItem>)],
  // Each kind's schema, seen as a member of the union (which it is; TS cannot map over the tuple's types).
  ...TYPED_KINDS.map((kind): [string, Decoder<KnownItem & Rest>] => [
    kind.fields.type.literal,
    keepingRest(kind as Reader<KnownItem>)
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
) as Reader<InputItem>

/** `input`: a string (one user message) or a list of items; anything else reads as absent. */
const Input = lenient(Schema.Union([list(InputItem), Schema.String]))

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
 * it: openaiPlan.ts leaves it out). Any string, blank included, names a response HTTP does not keep.
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

export const decodeBody = (json: Record<string, unknown>): Result.Result<ResponsesBody, PropertyKey> => {
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
export const decodeInput = Schema.decodeUnknownSync(Input)

export interface ResponsesRequest {
  readonly model: string
  readonly stream: boolean
  /** The whole body, for forwarding and translation; fields we do not interpret pass through. */
  readonly body: Record<string, unknown>
  /** The typed view of `body` (see ResponsesBody): what the gateway reads, never what it sends. */
  readonly decoded: ResponsesBody
}
