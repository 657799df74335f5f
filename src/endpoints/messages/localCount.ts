/**
 * `POST /v1/messages/count_tokens` answered locally for groups whose upstream has no such endpoint
 * (OpenAI platform): the request rendered as the texts a model reads, counted with the o200k
 * tokenizer those models use. It is an estimate (Claude Code reads it to manage its context
 * window), so it never fails: a field of an unexpected shape counts as nothing.
 */
import { Effect } from "effect"
import { countTokens } from "../kit/tokenEstimate.js"

/**
 * Per message: the role and the delimiters around it, as OpenAI's chat format frames a message
 * (`<|start|>role<|message|>…<|end|>`, 3 tokens); once more for the framing of the answer.
 */
const MESSAGE_OVERHEAD_TOKENS = 3
const REPLY_OVERHEAD_TOKENS = 3

/**
 * Per image, whatever its size (the request carries base64 or a URL, not dimensions): OpenAI's
 * high-detail tile price (85 + 170 per 512 px tile) for a 1920×1080 screenshot, the image Claude
 * Code sends most, scaled to 1365×768, 3×2 tiles: 85 + 6 × 170. A document that is not text (a PDF)
 * counts as one image: a floor, its pages are not known without decoding it.
 */
export const IMAGE_TOKENS = 1_105

/** Nesting deeper than this (tool results inside tool results) is not counted. */
const MAX_DEPTH = 8

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined)

interface Rendered {
  readonly texts: Array<string>
  images: number
}

const json = (v: unknown): string => (v === undefined ? "" : JSON.stringify(v) ?? "")

const renderContent = (content: unknown, out: Rendered, depth: number): void => {
  if (typeof content === "string") {
    out.texts.push(content)
    return
  }
  if (!Array.isArray(content) || depth > MAX_DEPTH) return
  for (const raw of content) {
    const block = asRecord(raw)
    if (block !== undefined) renderBlock(block, out, depth)
  }
}

const renderDocument = (block: Record<string, unknown>, out: Rendered, depth: number): void => {
  for (const key of ["title", "context"]) {
    const text = str(block[key])
    if (text !== undefined) out.texts.push(text)
  }
  const source = asRecord(block["source"])
  if (source?.["type"] === "text") out.texts.push(str(source["data"]) ?? "")
  else if (source?.["type"] === "content") renderContent(source["content"], out, depth + 1)
  else out.images++
}

const renderBlock = (block: Record<string, unknown>, out: Rendered, depth: number): void => {
  switch (block["type"]) {
    case "image":
      out.images++
      return
    case "document":
      renderDocument(block, out, depth)
      return
    case "tool_use":
    case "server_tool_use":
      out.texts.push(str(block["name"]) ?? "", json(block["input"]))
      return
    case "thinking":
      out.texts.push(str(block["thinking"]) ?? "")
      return
    case "redacted_thinking":
      // Encrypted: what the model reads from it is not known here.
      return
    default: {
      // text, tool_result, search_result and the server tools' result blocks: their text, title and content.
      for (const key of ["title", "text"]) {
        const text = str(block[key])
        if (text !== undefined) out.texts.push(text)
      }
      renderContent(block["content"], out, depth + 1)
    }
  }
}

const renderTool = (raw: unknown, out: Rendered): void => {
  const tool = asRecord(raw)
  if (tool === undefined) return
  out.texts.push(str(tool["name"]) ?? "", str(tool["description"]) ?? "", json(tool["input_schema"]))
}

/** The input tokens of a Messages request (`count_tokens`' `input_tokens`), estimated locally. */
export const countMessagesTokens = (body: Record<string, unknown>): Effect.Effect<number> => {
  const out: Rendered = { texts: [], images: 0 }
  renderContent(body["system"], out, 0)
  const messages = Array.isArray(body["messages"]) ? body["messages"] : []
  for (const raw of messages) renderContent(asRecord(raw)?.["content"], out, 0)
  if (Array.isArray(body["tools"])) for (const tool of body["tools"]) renderTool(tool, out)
  const overhead = messages.length * MESSAGE_OVERHEAD_TOKENS + REPLY_OVERHEAD_TOKENS
  return countTokens(out.texts).pipe(Effect.map((tokens) => tokens + out.images * IMAGE_TOKENS + overhead))
}
