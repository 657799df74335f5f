/**
 * Responses SSE events -> Chat Completions `chat.completion.chunk` frames, one upstream event at a
 * time.
 *
 * The grammar the openai SDK's `chat.completions.stream()` and the AI SDK rely on: every chunk
 * has one choice at index 0; the first delta carries `role: "assistant"`; text goes as `content`
 * deltas, each tool call opens with `{index, id, type, function: {name, arguments: ""}}` and then
 * carries only `arguments` pieces under the same index; the last choice chunk has the
 * `finish_reason`; with `stream_options.include_usage` every chunk has `usage: null` and one more
 * chunk with no choices carries the usage. A failure ends the stream with `{error}` instead, which
 * the SDK throws. `data: [DONE]` is the door's to write.
 *
 * Mutable on purpose: one instance per stream, and it runs for every event.
 */
import { fromResponsesAnswer, fromResponsesUsage } from "../../domain/upstreamJson.js"
import { emptyUsage, type TokenUsage } from "../../domain/usage.js"
import { isRecord } from "../error.js"
import { itemKeyOf, responsesFailure, type StreamEnding, str, UNFINISHED_MESSAGE } from "../streamEvents.js"
import { reasoningText } from "../messages/output.js"
import { chatUsage, completionIdFor, createdOf, finishReasonOf, reasoningDetail } from "./output.js"
import type { ChatChunkOut, ChatStreamErrorOut, ChunkDelta, FinishReason, ReasoningDetail } from "./types.js"

export type ChatStreamOut = ChatChunkOut | ChatStreamErrorOut

export type { StreamEnding } from "../streamEvents.js"

/** An output item seen added and not yet done; `streamed` once any of its content went out. */
interface Item {
  readonly toolIndex: number | undefined
  streamed: boolean
}

const NOTHING: ReadonlyArray<ChatStreamOut> = []


/** Error codes -> the `type` of OpenAI's error object, which the SDK reads into APIError. */
const errorTypeFor = (code: unknown): string =>
  code === "rate_limit_exceeded" ? "rate_limit_error" : code === "invalid_request_error" || code === "context_length_exceeded" ? "invalid_request_error" : "server_error"

export class ChatStreamTranslator {
  private readonly model: string
  private readonly includeUsage: boolean
  private readonly nowSeconds: number
  private id: string | undefined
  private created: number | undefined
  private started = false
  private done = false
  private nextToolIndex = 0
  private readonly items = new Map<unknown, Item>()
  private reported: TokenUsage | undefined = undefined
  private generated = ""
  /** Reasoning payloads, sent together before the finish chunk (stream helpers keep the last value of a field). */
  private readonly details: Array<ReasoningDetail> = []
  private out: Array<ChatStreamOut> | undefined = undefined

  constructor(ctx: { readonly model: string; readonly includeUsage: boolean; readonly nowSeconds: number }) {
    this.model = ctx.model
    this.includeUsage = ctx.includeUsage
    this.nowSeconds = ctx.nowSeconds
  }

  /** Usage the upstream reported (on its terminal event), for billing; undefined if it never did. */
  usage(): TokenUsage | undefined {
    return this.reported
  }

  /** Everything the model wrote that reached the client (text, reasoning, tool arguments), for estimating. */
  outputText(): string {
    return this.generated
  }

  step(event: Record<string, unknown>): ReadonlyArray<ChatStreamOut> {
    if (this.done) return NOTHING
    this.out = undefined
    const type = event["type"]
    if (type === "response.created" && isRecord(event["response"])) this.identify(event["response"])
    this.start()
    switch (type) {
      case "response.output_text.delta":
        this.text(itemKeyOf(event), { content: str(event["delta"]) })
        break
      case "response.refusal.delta":
        this.text(itemKeyOf(event), { refusal: str(event["delta"]) })
        break
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        this.text(itemKeyOf(event), { reasoning_content: str(event["delta"]) })
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
        this.complete(isRecord(event["response"]) ? event["response"] : {})
        break
      case "response.failed":
      case "error": {
        if (isRecord(event["response"])) this.report(event["response"]["usage"])
        const failure = responsesFailure(event)
        if (failure !== undefined) this.fail(failure.code, failure.message)
        break
      }
      default:
        // Lifecycle and done events the deltas already covered, and types OpenAI adds later.
        break
    }
    return this.out ?? NOTHING
  }

  /** The closing frame when the upstream ended without its terminal event; nothing once it ended. */
  finish(ending: StreamEnding): ReadonlyArray<ChatStreamOut> {
    if (this.done) return NOTHING
    this.out = undefined
    if (ending._tag === "Eof") this.fail("server_error", UNFINISHED_MESSAGE)
    else this.fail(ending.code, ending.message)
    return this.out ?? NOTHING
  }

  // -------------------------------------------------------------------------------------------

  private identify(response: Record<string, unknown>): void {
    this.id ??= completionIdFor(response["id"])
    this.created ??= createdOf(response, this.nowSeconds)
  }

  private chunk(delta: ChunkDelta, finishReason: FinishReason | null): ChatChunkOut {
    this.id ??= completionIdFor(undefined)
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created ?? this.nowSeconds,
      model: this.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(this.includeUsage ? { usage: null } : {})
    }
  }

  private push(frame: ChatStreamOut): void {
    if (this.out === undefined) this.out = [frame]
    else this.out.push(frame)
  }

  private start(): void {
    if (this.started) return
    this.started = true
    this.push(this.chunk({ role: "assistant", content: "" }, null))
  }

  /** Also for an item never added (servers that skip `output_item.added`), so its done event adds nothing twice. */
  private markStreamed(key: unknown): void {
    const item = this.items.get(key)
    if (item !== undefined) item.streamed = true
    else this.items.set(key, { toolIndex: undefined, streamed: true })
  }

  private text(key: unknown, delta: ChunkDelta): void {
    const text = delta.content ?? delta.refusal ?? delta.reasoning_content ?? ""
    if (text === "") return
    this.markStreamed(key)
    this.generated += text
    this.push(this.chunk(delta, null))
  }

  private openTool(key: unknown, item: Record<string, unknown>, seen: Item | undefined): number {
    if (seen?.toolIndex !== undefined) return seen.toolIndex
    const index = this.nextToolIndex++
    this.items.set(key, { toolIndex: index, streamed: seen?.streamed ?? false })
    const id = str(item["call_id"])
    const name = str(item["name"])
    this.push(this.chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] }, null))
    return index
  }

  private argumentsDelta(key: unknown, piece: string): void {
    const index = this.items.get(key)?.toolIndex
    if (index === undefined || piece === "") return
    this.markStreamed(key)
    this.generated += piece
    this.push(this.chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null))
  }

  private itemAdded(key: unknown, item: Record<string, unknown>): void {
    if (item["type"] === "function_call") {
      this.openTool(key, item, undefined)
      this.argumentsDelta(key, str(item["arguments"]))
    } else {
      this.items.set(key, { toolIndex: undefined, streamed: false })
    }
  }

  /** An item's end: send whatever of it no delta carried (servers that send whole items only). */
  private itemDone(key: unknown, item: Record<string, unknown>): void {
    const seen = this.items.get(key)
    const streamed = seen?.streamed === true
    switch (item["type"]) {
      case "message":
        if (!streamed && Array.isArray(item["content"])) {
          for (const part of item["content"]) {
            if (!isRecord(part)) continue
            if (part["type"] === "refusal") this.text(key, { refusal: str(part["refusal"]) })
            else this.text(key, { content: str(part["text"]) })
          }
        }
        break
      case "reasoning": {
        if (!streamed) this.text(key, { reasoning_content: reasoningText(item) })
        const detail = reasoningDetail(item, this.details.length)
        if (detail !== undefined) this.details.push(detail)
        break
      }
      case "function_call":
        this.openTool(key, item, seen)
        if (!streamed) this.argumentsDelta(key, str(item["arguments"]))
        break
      default:
        break
    }
    this.items.delete(key)
  }

  private report(usage: unknown): void {
    if (isRecord(usage)) this.reported = fromResponsesUsage(usage)
  }

  private complete(response: Record<string, unknown>): void {
    // With the provider tool calls among its output: billed per call.
    if (isRecord(response["usage"])) this.reported = fromResponsesAnswer(response)
    if (this.details.length > 0) this.push(this.chunk({ reasoning_details: this.details }, null))
    this.push(this.chunk({}, finishReasonOf(response, this.nextToolIndex > 0)))
    if (this.includeUsage) {
      this.push({ ...this.chunk({}, null), choices: [], usage: chatUsage(this.reported ?? emptyUsage) })
    }
    this.done = true
  }

  private fail(code: unknown, message: string): void {
    this.push({ error: { message, type: errorTypeFor(code), code: typeof code === "string" ? code : null, param: null } })
    this.done = true
  }
}
