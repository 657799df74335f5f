/**
 * Anthropic Messages streams and bodies in their wire form (SSE text exactly as the API frames it),
 * for the translation tests. Ids and signatures are shortened but shaped like the real ones.
 */
import type { AnthropicMessage, AnthropicStreamEvent } from "../../src/translate/index.js"

/** Parses SSE text into the JSON payloads, the way the upstream client hands them to the translator. */
export const parseSse = (text: string): Array<AnthropicStreamEvent> =>
  text
    .split(/\n\n+/)
    .map((frame) => frame.split("\n").find((line) => line.startsWith("data: ")))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice("data: ".length)) as AnthropicStreamEvent)

const start = (usage: string) =>
  `event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":${usage}}}

`

const BASIC_USAGE = `{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}`

export const TEXT_ONLY = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}

event: message_stop
data: {"type":"message_stop"}

`
)

export const TOOL_ONLY = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"loc"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ation\\": \\"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}

event: message_stop
data: {"type":"message_stop"}

`
)

/** A sentence, then two tool calls in one turn (the second one with no input at all). */
export const PARALLEL_TOOLS = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking both."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\":\\"Paris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01B","name":"get_time","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":77}}

event: message_stop
data: {"type":"message_stop"}

`
)

export const THINKING_SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
export const THINKING_TEXT = "The user wants the weather. I should call get_weather."

export const THINKING_TOOL = parseSse(
  start(`{"input_tokens":120,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}`) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants the weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" I should call get_weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"${THINKING_SIGNATURE}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me look that up."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01Think","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\": \\"Paris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":95,"output_tokens_details":{"thinking_tokens":30}}}

event: message_stop
data: {"type":"message_stop"}

`
)

export const REDACTED_DATA = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"

export const REDACTED = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"${REDACTED_DATA}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Done."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}

event: message_stop
data: {"type":"message_stop"}

`
)

export const MAX_TOKENS = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Once upon a time there"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`
)

/** Anthropic reports overload inside an open stream as an `error` event. */
export const ERROR_MID_STREAM = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Partial ans"}}

event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`
)

/** The connection drops in the middle of a tool call's arguments. */
export const CUT_IN_TOOL = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Running it."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01Cut","name":"shell","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": [\\"ls"}}

`
)

/** A long Codex session hitting the prompt cache: most input is read from cache. */
export const CACHED_USAGE = parseSse(
  start(`{"input_tokens":12,"cache_creation_input_tokens":2000,"cache_read_input_tokens":18000,"output_tokens":1}`) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Cached."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":12,"cache_creation_input_tokens":2000,"cache_read_input_tokens":18000,"output_tokens":50}}

event: message_stop
data: {"type":"message_stop"}

`
)

export const TEXT_TOOL_TEXT = parseSse(
  start(BASIC_USAGE) +
    `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Before."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01Mid","name":"lookup","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"q\\":1}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"After."}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}

event: message_stop
data: {"type":"message_stop"}

`
)

// ---------------------------------------------------------------------------------------------
// Non-streaming bodies
// ---------------------------------------------------------------------------------------------

const message = (content: AnthropicMessage["content"], stopReason: string, usage: AnthropicMessage["usage"]): AnthropicMessage => ({
  id: "msg_01XFDUDYJgAACzvnptvVoYEL",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5-20250929",
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage
})

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0
})

export const MESSAGE_TEXT = message([{ type: "text", text: "Hello world" }], "end_turn", usage(25, 12))

export const MESSAGE_TOOL_ONLY = message(
  [{ type: "tool_use", id: "toolu_01NoArgs", name: "list_files", input: {} }],
  "tool_use",
  usage(30, 15)
)

export const MESSAGE_THINKING_TOOL = message(
  [
    { type: "thinking", thinking: THINKING_TEXT, signature: THINKING_SIGNATURE },
    { type: "text", text: "Let me look that up." },
    { type: "tool_use", id: "toolu_01Think", name: "get_weather", input: { location: "Paris" } }
  ],
  "tool_use",
  { ...usage(120, 95), output_tokens_details: { thinking_tokens: 30 } }
)

export const MESSAGE_TEXT_TOOL_TEXT = message(
  [
    { type: "text", text: "Before." },
    { type: "tool_use", id: "toolu_01Mid", name: "lookup", input: { q: 1 } },
    { type: "text", text: "After, part one. " },
    { type: "text", text: "Part two." }
  ],
  "tool_use",
  usage(40, 30)
)

export const MESSAGE_CACHED = message([{ type: "text", text: "Cached." }], "end_turn", {
  input_tokens: 12,
  output_tokens: 50,
  cache_creation_input_tokens: 2000,
  cache_read_input_tokens: 18000
})

export const MESSAGE_REDACTED = message(
  [{ type: "redacted_thinking", data: REDACTED_DATA }, { type: "text", text: "Done." }],
  "end_turn",
  usage(25, 20)
)
