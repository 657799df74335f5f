/**
 * Responses SSE events -> Anthropic Messages stream events, one upstream event at a time.
 *
 * The grammar the Anthropic SDK's `messages.stream()` and Claude Code rely on: `message_start`
 * first; blocks one at a time, indexes 0, 1, 2... each `content_block_start` -> deltas ->
 * `content_block_stop`; then `message_delta` (stop reason, cumulative usage) and `message_stop`.
 * A failure ends the stream with an `error` event instead (as Anthropic's own streams do), open
 * blocks left as they are: the SDK throws on the error, so nothing half-built is ever used.
 *
 * Blocks open lazily: a text block on its first text, a thinking block on its first summary text
 * or, for reasoning without a summary, at the item's end when it carries encrypted content (the
 * signature). A tool_use block opens when its call is added, since id and name come first.
 *
 * No event but the deltas and the terminal one is relied on: what an item streamed is known by its
 * output index (or item id) whether or not its `output_item.added` came, so its `output_item.done`
 * never sends it again; an item the upstream never finished (no `output_item.done`) is finished
 * from the terminal event's output, and one that came only there is sent whole from it.
 * Mutable on purpose: one instance per stream, and it runs for every event.
 */
import { newId } from "../../domain/ids.js"
import { fromResponsesAnswer, fromResponsesUsage } from "../../domain/upstreamJson.js"
import { emptyUsage, type TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import { itemKeyOf, responsesFailure, type StreamEnding, str, UNFINISHED_MESSAGE } from "../streamEvents.js"
import { anthropicUsage, errorTypeFor, messageIdFor, reasoningText, SUMMARY_SEPARATOR } from "./output.js"
import { encodeThinkingSignature } from "./signature.js"
import type { AnthropicBlockOut, AnthropicStreamEventOut, BlockDelta, StopReason } from "./types.js"

export type { AnthropicStreamEventOut } from "./types.js"

export type { StreamEnding } from "../streamEvents.js"

/** The block being written; `key` is the output item it belongs to. */
type Open =
  | { readonly kind: "text"; readonly index: number; readonly key: unknown; readonly part: unknown }
  | { readonly kind: "thinking"; readonly index: number; readonly key: unknown; part: unknown; hasText: boolean }
  | { readonly kind: "tool"; readonly index: number; readonly key: unknown }

/** An output item seen added and not yet done. */
interface Item {
  readonly kind: "message" | "reasoning" | "function_call"
  readonly id: unknown
}

const NOTHING: ReadonlyArray<AnthropicStreamEventOut> = []


export class MessagesStreamTranslator {
  private readonly model: string
  private messageId: string | undefined
  private started = false
  private done = false
  private nextIndex = 0
  private open: Open | undefined = undefined
  private readonly items = new Map<unknown, Item>()
  /** The keys (output index or item id) of items some of whose content went out. */
  private readonly streamed = new Set<unknown>()
  /** The keys (output index and item id) of items finished (`output_item.done`). */
  private readonly finished = new Set<unknown>()
  private calledTool = false
  private reported: TokenUsage | undefined = undefined
  private generated = ""
  private out: Array<AnthropicStreamEventOut> | undefined = undefined

  constructor(ctx: { readonly model: string; readonly messageId?: string }) {
    this.model = ctx.model
    this.messageId = ctx.messageId
  }

  /** Usage the upstream reported (on its terminal event), for billing; undefined if it never did. */
  usage(): TokenUsage | undefined {
    return this.reported
  }

  /** Everything the model wrote that reached the client (text, thinking, tool input), for estimating. */
  outputText(): string {
    return this.generated
  }

  step(event: Record<string, unknown>): ReadonlyArray<AnthropicStreamEventOut> {
    if (this.done) return NOTHING
    this.out = undefined
    const type = event["type"]
    if (type === "response.created" && isRecord(event["response"]) && this.messageId === undefined) {
      this.messageId = messageIdFor(event["response"]["id"])
    }
    this.start()
    switch (type) {
      case "response.output_text.delta":
      case "response.refusal.delta":
        this.textDelta(itemKeyOf(event), event["content_index"], str(event["delta"]))
        break
      case "response.reasoning_summary_text.delta":
        this.thinkingDelta(itemKeyOf(event), event["summary_index"], str(event["delta"]))
        break
      case "response.reasoning_text.delta":
        this.thinkingDelta(itemKeyOf(event), event["content_index"], str(event["delta"]))
        break
      case "response.function_call_arguments.delta":
        this.argumentsDelta(itemKeyOf(event), str(event["delta"]))
        break
      case "response.output_item.added":
        if (isRecord(event["item"])) this.itemAdded(itemKeyOf(event) ?? event["item"]["id"], event["item"])
        break
      case "response.output_item.done":
        if (isRecord(event["item"])) this.itemDone(itemKeyOf(event) ?? event["item"]["id"], event["item"])
        break
      case "response.completed":
      case "response.incomplete":
        this.complete(event["response"], type === "response.incomplete")
        break
      case "response.failed":
      case "error": {
        if (isRecord(event["response"])) this.report(event["response"]["usage"])
        const failure = responsesFailure(event)
        if (failure !== undefined) this.fail(failure.code, failure.message)
        break
      }
      case "keepalive":
        this.push({ type: "ping" })
        break
      default:
        // Lifecycle and done events the deltas already covered, and types OpenAI adds later.
        break
    }
    return this.out ?? NOTHING
  }

  /** The closing event when the upstream ended without its terminal event; nothing once it ended. */
  finish(ending: StreamEnding): ReadonlyArray<AnthropicStreamEventOut> {
    if (this.done) return NOTHING
    this.out = undefined
    this.start()
    if (ending._tag === "Eof") this.fail("server_error", UNFINISHED_MESSAGE)
    else this.fail(ending.code, ending.message)
    return this.out ?? NOTHING
  }

  // -------------------------------------------------------------------------------------------

  private push(event: AnthropicStreamEventOut): void {
    if (this.out === undefined) this.out = [event]
    else this.out.push(event)
  }

  private start(): void {
    if (this.started) return
    this.started = true
    this.push({
      type: "message_start",
      message: {
        id: this.messageId ?? newId("msg"),
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // Responses reports usage only at the end; message_delta carries it.
        usage: anthropicUsage(emptyUsage)
      }
    })
  }

  private openBlock(block: AnthropicBlockOut): number {
    this.closeBlock()
    const index = this.nextIndex
    this.nextIndex += 1
    this.push({ type: "content_block_start", index, content_block: block })
    return index
  }

  private closeBlock(): void {
    if (this.open === undefined) return
    this.push({ type: "content_block_stop", index: this.open.index })
    this.open = undefined
  }

  private delta(index: number, delta: BlockDelta): void {
    this.push({ type: "content_block_delta", index, delta })
  }

  private markStreamed(key: unknown): void {
    this.streamed.add(key)
  }

  private textDelta(key: unknown, part: unknown, text: string): void {
    if (text === "") return
    let open = this.open
    if (open?.kind !== "text" || open.key !== key || open.part !== part) {
      open = { kind: "text", index: this.openBlock({ type: "text", text: "" }), key, part }
      this.open = open
    }
    this.delta(open.index, { type: "text_delta", text })
    this.generated += text
    this.markStreamed(key)
  }

  private thinkingBlock(key: unknown, part: unknown): Extract<Open, { kind: "thinking" }> {
    const open = this.open
    if (open?.kind === "thinking" && open.key === key) return open
    const opened: Extract<Open, { kind: "thinking" }> = {
      kind: "thinking",
      index: this.openBlock({ type: "thinking", thinking: "", signature: "" }),
      key,
      part,
      hasText: false
    }
    this.open = opened
    return opened
  }

  /** Summary parts of one reasoning item share its thinking block, a blank line apart. */
  private thinkingDelta(key: unknown, part: unknown, text: string): void {
    if (text === "") return
    const open = this.thinkingBlock(key, part)
    const piece = open.hasText && open.part !== part ? SUMMARY_SEPARATOR + text : text
    open.part = part
    open.hasText = true
    this.delta(open.index, { type: "thinking_delta", thinking: piece })
    this.generated += piece
    this.markStreamed(key)
  }

  private argumentsDelta(key: unknown, piece: string): void {
    const open = this.open
    // Calls stream one at a time; arguments for a call that is not the open block have no block to go to.
    if (piece === "" || open?.kind !== "tool" || open.key !== key) return
    this.delta(open.index, { type: "input_json_delta", partial_json: piece })
    this.generated += piece
    this.markStreamed(key)
  }

  private openTool(key: unknown, item: Record<string, unknown>): void {
    const callId = item["call_id"]
    const index = this.openBlock({
      type: "tool_use",
      id: typeof callId === "string" && callId !== "" ? callId : newId("toolu"),
      name: str(item["name"]),
      input: {}
    })
    this.open = { kind: "tool", index, key }
    this.calledTool = true
  }

  private itemAdded(key: unknown, item: Record<string, unknown>): void {
    const kind = item["type"]
    if (kind !== "message" && kind !== "reasoning" && kind !== "function_call") return
    this.items.set(key, { kind, id: item["id"] })
    if (kind === "function_call") {
      this.openTool(key, item)
      this.argumentsDelta(key, str(item["arguments"]))
    }
  }

  /**
   * An item's end: close its block, and send whatever of it no delta carried (servers that send
   * whole items only). A reasoning item's signature goes out here, just before its block stops.
   */
  private itemDone(key: unknown, item: Record<string, unknown>): void {
    const seen = this.items.get(key)
    this.items.delete(key)
    const id = item["id"] ?? seen?.id
    this.finished.add(key)
    if (id !== undefined) this.finished.add(id)
    const streamed = this.streamed.has(key) || (id !== undefined && this.streamed.has(id))
    const open = this.open
    switch (item["type"]) {
      case "message": {
        if (!streamed && Array.isArray(item["content"])) {
          item["content"].forEach((part, i) => {
            if (!isRecord(part)) return
            this.textDelta(key, i, str(part["type"] === "refusal" ? part["refusal"] : part["text"]))
          })
        }
        if (this.open?.kind === "text" && this.open.key === key) this.closeBlock()
        break
      }
      case "reasoning": {
        if (!streamed) this.thinkingDelta(key, 0, reasoningText(item))
        const encrypted = item["encrypted_content"]
        // The signature belongs to the item's thinking block: still open, or opened now for an item
        // that streamed nothing. A block closed already (its item finished only by the terminal
        // event, after other output) stays unsigned rather than signing a second, empty one.
        if (typeof id === "string" && id !== "" && typeof encrypted === "string" && encrypted !== "") {
          const open = this.open?.kind === "thinking" && this.open.key === key ? this.open : undefined
          const block = streamed ? open : this.thinkingBlock(key, 0)
          if (block !== undefined) {
            this.delta(block.index, { type: "signature_delta", signature: encodeThinkingSignature({ id, encrypted_content: encrypted }) })
          }
        }
        if (this.open?.kind === "thinking" && this.open.key === key) this.closeBlock()
        break
      }
      case "function_call": {
        if (seen === undefined && !(open?.kind === "tool" && open.key === key)) this.openTool(key, item)
        if (!streamed) this.argumentsDelta(key, str(item["arguments"]))
        if (this.open?.kind === "tool" && this.open.key === key) this.closeBlock()
        break
      }
      default:
        break
    }
  }

  private report(usage: unknown): void {
    if (isRecord(usage)) this.reported = fromResponsesUsage(usage)
  }

  private complete(response: unknown, incomplete: boolean): void {
    const r = isRecord(response) ? response : {}
    // With the provider tool calls among its output: billed per call.
    if (isRecord(r["usage"])) this.reported = fromResponsesAnswer(r)
    // Items the upstream never finished, or never streamed at all, are finished from the output.
    if (Array.isArray(r["output"])) {
      r["output"].forEach((item: unknown, index) => {
        if (!isRecord(item) || this.finished.has(index) || (item["id"] !== undefined && this.finished.has(item["id"]))) return
        this.itemDone(this.items.has(item["id"]) && !this.items.has(index) ? item["id"] : index, item)
      })
    }
    this.closeBlock()
    let stopReason: StopReason = this.calledTool ? "tool_use" : "end_turn"
    if (incomplete || r["status"] === "incomplete") {
      const details = r["incomplete_details"]
      stopReason = isRecord(details) && details["reason"] === "content_filter" ? "refusal" : "max_tokens"
    }
    this.push({
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: anthropicUsage(this.reported ?? emptyUsage)
    })
    this.push({ type: "message_stop" })
    this.done = true
  }

  private fail(code: unknown, message: string): void {
    this.push({ type: "error", error: { type: errorTypeFor(code), message } })
    this.done = true
  }
}
