/**
 * Responses content parts -> Anthropic content blocks (text, images, documents).
 * Nothing the user sent is dropped silently: a part we cannot express upstream is a 400 that
 * names it. Only empty text is skipped, because Anthropic rejects empty text blocks.
 */
import { isRecord, reject } from "./error.js"
import type { DocumentBlock, ImageBlock, ImageMediaType, TextBlock } from "./types.js"

const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"])
const TEXT_PART_TYPES: ReadonlySet<string> = new Set(["input_text", "output_text", "text"])

/** `content` as a list of parts: a string is one text part. */
export const partsOf = (content: unknown, path: string): ReadonlyArray<Record<string, unknown>> => {
  if (typeof content === "string") return [{ type: "input_text", text: content }]
  if (content === undefined || content === null) return []
  if (!Array.isArray(content)) return reject("content must be a string or an array of content parts", path)
  return content.map((part, i) =>
    isRecord(part) ? part : reject("each content part must be an object", `${path}[${i}]`)
  )
}

/** The text of a text-like part, or undefined when the part is not text. */
export const textOf = (part: Record<string, unknown>, path: string): string | undefined => {
  const type = part["type"]
  if (typeof type === "string" && TEXT_PART_TYPES.has(type)) {
    const text = part["text"]
    return typeof text === "string" ? text : reject("text parts need a string 'text'", `${path}.text`)
  }
  if (type === "refusal") {
    const refusal = part["refusal"]
    return typeof refusal === "string" ? refusal : reject("refusal parts need a string 'refusal'", `${path}.refusal`)
  }
  return undefined
}

interface DataUrl {
  readonly mediaType: string
  readonly base64: string
}

const parseDataUrl = (url: string): DataUrl | undefined => {
  const match = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s.exec(url)
  if (match === null) return undefined
  const mediaType = (match[1] ?? "").trim().toLowerCase()
  const params = match[2] ?? ""
  const payload = match[3] ?? ""
  const base64 = /;base64/i.test(params)
    ? payload.replace(/\s+/g, "")
    : Buffer.from(decodeURIComponent(payload), "utf8").toString("base64")
  return { mediaType: mediaType === "image/jpg" ? "image/jpeg" : mediaType, base64 }
}

const isHttpUrl = (url: string): boolean => /^https?:\/\//i.test(url)

export const imageBlock = (part: Record<string, unknown>, path: string): ImageBlock => {
  if (part["file_id"] !== undefined && part["file_id"] !== null) {
    return reject("input_image with file_id is not supported here; send the image as a data URL or an https URL", `${path}.file_id`)
  }
  const raw = part["image_url"]
  // The Chat Completions shape `{image_url: {url}}` shows up from adapted clients; accept it too.
  const url = typeof raw === "string" ? raw : isRecord(raw) && typeof raw["url"] === "string" ? raw["url"] : undefined
  if (url === undefined || url === "") return reject("input_image needs an image_url", `${path}.image_url`)
  if (isHttpUrl(url)) return { type: "image", source: { type: "url", url } }
  const data = parseDataUrl(url)
  if (data === undefined) return reject("image_url must be an http(s) URL or a data: URL", `${path}.image_url`)
  if (!IMAGE_TYPES.has(data.mediaType)) {
    return reject(
      `Unsupported image media type '${data.mediaType}'; use image/jpeg, image/png, image/gif or image/webp`,
      `${path}.image_url`
    )
  }
  return { type: "image", source: { type: "base64", media_type: data.mediaType as ImageMediaType, data: data.base64 } }
}

export const documentBlock = (part: Record<string, unknown>, path: string): DocumentBlock => {
  if (part["file_id"] !== undefined && part["file_id"] !== null) {
    return reject("input_file with file_id is not supported here; send the file as file_data or file_url", `${path}.file_id`)
  }
  const title = typeof part["filename"] === "string" && part["filename"] !== "" ? { title: part["filename"] } : {}
  const fileUrl = part["file_url"]
  if (typeof fileUrl === "string" && isHttpUrl(fileUrl)) return { type: "document", source: { type: "url", url: fileUrl }, ...title }
  const fileData = part["file_data"]
  if (typeof fileData !== "string" || fileData === "") {
    return reject("input_file needs file_data (a data: URL) or an http(s) file_url", path)
  }
  const data = parseDataUrl(fileData)
  if (data === undefined) return reject("file_data must be a data: URL", `${path}.file_data`)
  if (data.mediaType === "application/pdf") {
    return { type: "document", source: { type: "base64", media_type: "application/pdf", data: data.base64 }, ...title }
  }
  if (data.mediaType.startsWith("text/") || data.mediaType === "application/json") {
    const text = Buffer.from(data.base64, "base64").toString("utf8")
    return { type: "document", source: { type: "text", media_type: "text/plain", data: text }, ...title }
  }
  return reject(`Unsupported file type '${data.mediaType}'; send a PDF or a text file`, `${path}.file_data`)
}

/** A user-side part (message content or function output) -> a block, or undefined for empty text. */
export const userBlock = (part: Record<string, unknown>, path: string): TextBlock | ImageBlock | DocumentBlock | undefined => {
  const text = textOf(part, path)
  if (text !== undefined) return text === "" ? undefined : { type: "text", text }
  if (part["type"] === "input_image") return imageBlock(part, path)
  if (part["type"] === "input_file") return documentBlock(part, path)
  return reject(`Unsupported content part type '${String(part["type"])}'`, `${path}.type`)
}
