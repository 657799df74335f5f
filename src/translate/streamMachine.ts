/**
 * The stream translator's state and the transitions it is made of: open and close items, parts
 * and blocks, and end the response. `stream.ts` decides which transition each upstream event
 * triggers; this file keeps the Responses grammar (ids, indexes, sequence numbers) consistent.
 */
import type { TokenUsage } from "../domain/usage.js"
import { emptyUsage } from "../domain/usage.js"
import { newId } from "../domain/ids.js"
import { isRecord } from "./error.js"
import { restoreToolName } from "./names.js"
import {
  buildResponse,
  customCallId,
  customInputOf,
  functionCallItem,
  isCustomTool,
  messageItem,
  type Outcome,
  outcomeOf,
  type OutputItem,
  outputTextPart,
  reasoningItem,
  type ResponseContext,
  toolCallItem
} from "./output.js"
import { encodeReasoning } from "./reasoning.js"
import type { ResponsesStreamEvent } from "./types.js"

type OpenBlock =
  | { readonly kind: "text"; readonly index: unknown; readonly contentIndex: number; readonly text: string }
  | {
    readonly kind: "thinking"
    readonly index: unknown
    readonly itemId: string
    readonly outputIndex: number
    readonly text: string
    readonly signature: string
  }
  | {
    readonly kind: "tool"
    readonly index: unknown
    readonly itemId: string
    readonly outputIndex: number
    readonly callId: string
    readonly name: string
    readonly args: string
    /** Input given whole in content_block_start (normally `{}` and empty here). */
    readonly initial: string
    /** A client `custom` tool: its JSON is buffered and sent as raw input when the block ends. */
    readonly custom: boolean
  }
  | { readonly kind: "skip"; readonly index: unknown }

/** The message item a run of text blocks writes into; `parts` are the finished text parts. */
interface OpenMessage {
  readonly itemId: string
  readonly outputIndex: number
  readonly parts: ReadonlyArray<string>
}

export interface StreamState {
  readonly ctx: ResponseContext
  readonly phase: "new" | "streaming" | "done"
  /** The next sequence_number. */
  readonly seq: number
  /** Finished items, in output_index order. */
  readonly items: ReadonlyArray<OutputItem>
  /** How many items were added (the next output_index). */
  readonly added: number
  readonly message: OpenMessage | undefined
  readonly block: OpenBlock | undefined
  readonly usage: TokenUsage
  readonly stopReason: unknown
}

export const initialStreamState = (ctx: ResponseContext): StreamState => ({
  ctx,
  phase: "new",
  seq: 0,
  items: [],
  added: 0,
  message: undefined,
  block: undefined,
  usage: emptyUsage,
  stopReason: null
})

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * One step's working copy: the state fields are replaced, never mutated in place, so the state the
 * caller passed in stays valid.
 */
export class Step {
  readonly s: Mutable<StreamState>
  readonly out: Array<ResponsesStreamEvent> = []
  constructor(state: StreamState) {
    this.s = { ...state }
  }

  emit(type: string, payload: Record<string, unknown>): void {
    this.out.push({ type, sequence_number: this.s.seq, ...payload })
    this.s.seq += 1
  }

  result(): readonly [StreamState, ReadonlyArray<ResponsesStreamEvent>] {
    return [this.s, this.out]
  }

  start(): void {
    if (this.s.phase !== "new") return
    const response = buildResponse(this.s.ctx, "in_progress", [], null)
    this.emit("response.created", { response })
    this.emit("response.in_progress", { response })
    this.s.phase = "streaming"
  }

  private nextOutputIndex(): number {
    const i = this.s.added
    this.s.added += 1
    return i
  }

  private finishItem(outputIndex: number, item: OutputItem): void {
    this.emit("response.output_item.done", { output_index: outputIndex, item })
    this.s.items = [...this.s.items, item]
  }

  private openMessage(): OpenMessage {
    if (this.s.message !== undefined) return this.s.message
    const message: OpenMessage = { itemId: newId("msg"), outputIndex: this.nextOutputIndex(), parts: [] }
    this.emit("response.output_item.added", { output_index: message.outputIndex, item: messageItem(message.itemId, [], "in_progress") })
    this.s.message = message
    return message
  }

  closeMessage(status: "completed" | "incomplete"): void {
    const m = this.s.message
    if (m === undefined) return
    this.finishItem(m.outputIndex, messageItem(m.itemId, m.parts, status))
    this.s.message = undefined
  }

  startBlock(index: unknown, block: Record<string, unknown>): void {
    // Anthropic streams one block at a time; a new start means the previous one is over.
    if (this.s.block !== undefined) this.closeBlock("normal")
    const type = block["type"]
    if (type === "text") {
      const m = this.openMessage()
      const contentIndex = m.parts.length
      this.emit("response.content_part.added", {
        item_id: m.itemId,
        output_index: m.outputIndex,
        content_index: contentIndex,
        part: outputTextPart("")
      })
      this.s.block = { kind: "text", index, contentIndex, text: "" }
      this.delta(index, { type: "text_delta", text: block["text"] })
    } else if (type === "thinking") {
      this.closeMessage("completed")
      const itemId = newId("rs")
      const outputIndex = this.nextOutputIndex()
      this.emit("response.output_item.added", { output_index: outputIndex, item: reasoningItem(itemId, undefined, null, "in_progress") })
      this.emit("response.reasoning_summary_part.added", {
        item_id: itemId,
        output_index: outputIndex,
        summary_index: 0,
        part: { type: "summary_text", text: "" }
      })
      const signature = typeof block["signature"] === "string" ? block["signature"] : ""
      this.s.block = { kind: "thinking", index, itemId, outputIndex, text: "", signature }
      this.delta(index, { type: "thinking_delta", thinking: block["thinking"] })
    } else if (type === "redacted_thinking") {
      // Complete at start and never has deltas: the whole item goes out at once.
      this.closeMessage("completed")
      const itemId = newId("rs")
      const outputIndex = this.nextOutputIndex()
      const data = typeof block["data"] === "string" ? block["data"] : ""
      const encrypted = encodeReasoning({ type: "redacted_thinking", data })
      this.emit("response.output_item.added", { output_index: outputIndex, item: reasoningItem(itemId, undefined, encrypted, "in_progress") })
      this.finishItem(outputIndex, reasoningItem(itemId, undefined, encrypted, "completed"))
      this.s.block = { kind: "skip", index }
    } else if (type === "tool_use") {
      this.closeMessage("completed")
      const name = typeof block["name"] === "string" ? block["name"] : ""
      const custom = isCustomTool(name, this.s.ctx.toolNames)
      const itemId = custom ? customCallId() : newId("fc")
      const outputIndex = this.nextOutputIndex()
      const callId = typeof block["id"] === "string" && block["id"] !== "" ? block["id"] : newId("toolu")
      const input = block["input"]
      const initial = isRecord(input) && Object.keys(input).length > 0 ? JSON.stringify(input) : ""
      this.emit("response.output_item.added", {
        output_index: outputIndex,
        item: toolCallItem(itemId, callId, name, "", "in_progress", this.s.ctx.toolNames)
      })
      this.s.block = { kind: "tool", index, itemId, outputIndex, callId, name, args: "", initial, custom }
    } else {
      // Server-tool blocks and future types: we offer no server tools, so nothing to show.
      this.s.block = { kind: "skip", index }
    }
  }

  delta(index: unknown, delta: Record<string, unknown>): void {
    const b = this.s.block
    if (b === undefined || b.index !== index) return
    const type = delta["type"]
    if (b.kind === "text" && type === "text_delta" && typeof delta["text"] === "string" && delta["text"] !== "") {
      const m = this.openMessage()
      this.emit("response.output_text.delta", {
        item_id: m.itemId,
        output_index: m.outputIndex,
        content_index: b.contentIndex,
        delta: delta["text"],
        logprobs: []
      })
      this.s.block = { ...b, text: b.text + delta["text"] }
    } else if (b.kind === "thinking" && type === "thinking_delta" && typeof delta["thinking"] === "string" && delta["thinking"] !== "") {
      this.emit("response.reasoning_summary_text.delta", {
        item_id: b.itemId,
        output_index: b.outputIndex,
        summary_index: 0,
        delta: delta["thinking"]
      })
      this.s.block = { ...b, text: b.text + delta["thinking"] }
    } else if (b.kind === "thinking" && type === "signature_delta" && typeof delta["signature"] === "string") {
      // No client event: the signature only matters when the block is replayed.
      this.s.block = { ...b, signature: b.signature + delta["signature"] }
    } else if (b.kind === "tool" && type === "input_json_delta" && typeof delta["partial_json"] === "string" && delta["partial_json"] !== "") {
      const piece = delta["partial_json"]
      // Custom tool input is a JSON string inside the lowered `{input}`; it can only be decoded
      // whole, so it is buffered (Codex acts on output_item.done anyway).
      if (!b.custom) this.emit("response.function_call_arguments.delta", { item_id: b.itemId, output_index: b.outputIndex, delta: piece })
      this.s.block = { ...b, args: b.args + piece }
    }
  }

  stopBlock(index: unknown): void {
    if (this.s.block !== undefined && this.s.block.index === index) this.closeBlock("normal")
  }

  /** "abort" closes text and thinking as they stand but leaves a tool call unfinished. */
  closeBlock(mode: "normal" | "abort"): void {
    const b = this.s.block
    this.s.block = undefined
    if (b === undefined) return
    if (b.kind === "text") {
      const m = this.openMessage()
      const at = { item_id: m.itemId, output_index: m.outputIndex, content_index: b.contentIndex }
      this.emit("response.output_text.done", { ...at, text: b.text, logprobs: [] })
      this.emit("response.content_part.done", { ...at, part: outputTextPart(b.text) })
      this.s.message = { ...m, parts: [...m.parts, b.text] }
    } else if (b.kind === "thinking") {
      const at = { item_id: b.itemId, output_index: b.outputIndex, summary_index: 0 }
      this.emit("response.reasoning_summary_text.done", { ...at, text: b.text })
      this.emit("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text: b.text } })
      // Without a signature (cut stream) the block cannot be replayed, so carry no payload.
      const encrypted = b.signature === "" ? null : encodeReasoning({ type: "thinking", thinking: b.text, signature: b.signature })
      this.finishItem(b.outputIndex, reasoningItem(b.itemId, b.text, encrypted, mode === "normal" ? "completed" : "incomplete"))
    } else if (b.kind === "tool" && mode === "normal" && b.custom) {
      const at = { item_id: b.itemId, output_index: b.outputIndex }
      const input = customInputOf(parseJson(b.args === "" ? b.initial : b.args))
      if (input !== "") this.emit("response.custom_tool_call_input.delta", { ...at, delta: input })
      this.emit("response.custom_tool_call_input.done", { ...at, input })
      this.finishItem(b.outputIndex, toolCallItem(b.itemId, b.callId, b.name, input, "completed", this.s.ctx.toolNames))
    } else if (b.kind === "tool" && mode === "normal") {
      const at = { item_id: b.itemId, output_index: b.outputIndex }
      let args = b.args
      if (args === "") {
        // Clients expect JSON arguments: no input is "{}", sent as a delta so the deltas add up to done.
        args = b.initial === "" ? "{}" : b.initial
        this.emit("response.function_call_arguments.delta", { ...at, delta: args })
      }
      const { name } = restoreToolName(b.name, this.s.ctx.toolNames)
      this.emit("response.function_call_arguments.done", { ...at, name, arguments: args })
      this.finishItem(b.outputIndex, functionCallItem(b.itemId, b.callId, b.name, args, "completed", this.s.ctx.toolNames))
    }
  }

  terminate(outcome: Outcome): void {
    const type = outcome.status === "completed"
      ? "response.completed"
      : outcome.status === "incomplete"
      ? "response.incomplete"
      : "response.failed"
    this.emit(type, { response: buildResponse(this.s.ctx, outcome.status, this.s.items, this.s.usage, outcome) })
    this.s.phase = "done"
  }

  fail(code: string, message: string): void {
    this.start()
    this.closeBlock("abort")
    this.closeMessage("incomplete")
    this.terminate({ status: "failed", code, message })
  }

  stop(): void {
    if (this.s.block?.kind === "tool") {
      this.fail("server_error", "The upstream ended the message in the middle of a function call")
      return
    }
    this.closeBlock("normal")
    const outcome = outcomeOf(this.s.stopReason)
    this.closeMessage(outcome.status === "completed" ? "completed" : "incomplete")
    this.terminate(outcome)
  }
}

/** The JSON a tool call streamed, or the raw text when it is not valid JSON (never lose input). */
const parseJson = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
