/**
 * Anthropic user-side content blocks -> Responses input content parts (text, images, files),
 * and a `tool_result` -> a function output plus the parts a string output cannot hold.
 * A block we cannot express is a 400 that names it; nothing the user sent is dropped silently.
 */
import { isRecord, reject } from "../error.js"

export type InputPart =
  | { readonly type: "input_text"; readonly text: string }
  | { readonly type: "input_image"; readonly image_url: string; readonly detail: "auto" }
  | { readonly type: "input_file"; readonly filename: string; readonly file_data: string }
  | { readonly type: "input_file"; readonly file_url: string }

/** `content` as a list of blocks: a string is one text block. */
export const blocksOf = (content: unknown, path: string): ReadonlyArray<Record<string, unknown>> => {
  if (typeof content === "string") return [{ type: "text", text: content }]
  if (!Array.isArray(content)) return reject("content must be a string or an array of content blocks", path)
  return content.map((block, i) => {
    if (!isRecord(block) || typeof block["type"] !== "string") {
      return reject("each content block must be an object with a string 'type'", `${path}[${i}]`)
    }
    return block
  })
}

export const textOf = (block: Record<string, unknown>, path: string): string => {
  const text = block["text"]
  return typeof text === "string" ? text : reject("text blocks need a string 'text'", `${path}.text`)
}

const sourceOf = (block: Record<string, unknown>, path: string): Record<string, unknown> => {
  const source = block["source"]
  return isRecord(source) ? source : reject(`${String(block["type"])} blocks need a 'source' object`, `${path}.source`)
}

const stringField = (record: Record<string, unknown>, key: string, path: string): string => {
  const v = record[key]
  return typeof v === "string" && v !== "" ? v : reject(`'${key}' must be a non-empty string`, `${path}.${key}`)
}

const filesApiMessage = (kind: string) =>
  `${kind} blocks with a 'file' source (Anthropic Files API) cannot be sent to this model; send the data as base64 or a URL`

export const imagePart = (block: Record<string, unknown>, path: string): InputPart => {
  const source = sourceOf(block, path)
  const at = `${path}.source`
  switch (source["type"]) {
    case "base64":
      return {
        type: "input_image",
        image_url: `data:${stringField(source, "media_type", at)};base64,${stringField(source, "data", at)}`,
        detail: "auto"
      }
    case "url":
      return { type: "input_image", image_url: stringField(source, "url", at), detail: "auto" }
    case "file":
      return reject(filesApiMessage("image"), `${at}.type`)
    default:
      return reject(`Unsupported image source type '${String(source["type"])}'`, `${at}.type`)
  }
}

/** The text of a document's `content` source: its text blocks (images there go as images). */
const contentSourceParts = (content: unknown, path: string): ReadonlyArray<InputPart> =>
  blocksOf(content, path).flatMap((b, i) => userParts(b, `${path}[${i}]`))

export const documentParts = (block: Record<string, unknown>, path: string): ReadonlyArray<InputPart> => {
  const source = sourceOf(block, path)
  const at = `${path}.source`
  const title = typeof block["title"] === "string" && block["title"] !== "" ? block["title"] : undefined
  switch (source["type"]) {
    case "base64": {
      const mediaType = stringField(source, "media_type", at)
      if (mediaType !== "application/pdf") {
        return reject(`Unsupported document media type '${mediaType}'; send a PDF or plain text`, `${at}.media_type`)
      }
      // Responses wants a file name with inline file data.
      const filename = title === undefined ? "document.pdf" : /\.pdf$/i.test(title) ? title : `${title}.pdf`
      return [{ type: "input_file", filename, file_data: `data:application/pdf;base64,${stringField(source, "data", at)}` }]
    }
    case "text": {
      const data = source["data"]
      if (typeof data !== "string") return reject("text document sources need a string 'data'", `${at}.data`)
      // The title is part of what the model was meant to see; a plain text part has no other place for it.
      const text = title === undefined ? data : `${title}\n\n${data}`
      return text === "" ? [] : [{ type: "input_text", text }]
    }
    case "content":
      return contentSourceParts(source["content"], `${at}.content`)
    case "url":
      return [{ type: "input_file", file_url: stringField(source, "url", at) }]
    case "file":
      return reject(filesApiMessage("document"), `${at}.type`)
    default:
      return reject(`Unsupported document source type '${String(source["type"])}'`, `${at}.type`)
  }
}

/**
 * A user content block (other than tool_result) -> its input parts. Empty text is skipped: it
 * carries nothing and Anthropic itself rejects it.
 */
export const userParts = (block: Record<string, unknown>, path: string): ReadonlyArray<InputPart> => {
  switch (block["type"]) {
    case "text": {
      const text = textOf(block, path)
      return text === "" ? [] : [{ type: "input_text", text }]
    }
    case "image":
      return [imagePart(block, path)]
    case "document":
      return documentParts(block, path)
    default:
      return reject(`Content block type '${String(block["type"])}' is not supported on this model`, `${path}.type`)
  }
}

export interface ToolOutput {
  readonly callId: string
  readonly output: string
  /** Images and files the tool returned: a function output here is text, so they follow as a user message. */
  readonly attachments: ReadonlyArray<InputPart>
}

/**
 * The prefix that tells the model a tool failed (`is_error: true`). A text output has no error
 * flag in Responses; an output that already says it is an error is left as it is.
 */
const ERROR_PREFIX = "Error: "
const SAYS_ERROR = /^\s*(error\b|<tool_use_error>)/i

export const toolOutput = (block: Record<string, unknown>, path: string): ToolOutput => {
  const callId = stringField(block, "tool_use_id", path)
  const content = block["content"]
  const texts: Array<string> = []
  const attachments: Array<InputPart> = []
  if (content !== undefined && content !== null) {
    blocksOf(content, `${path}.content`).forEach((b, i) => {
      const at = `${path}.content[${i}]`
      const type = b["type"]
      if (type === "text" || type === "image" || type === "document") {
        for (const part of userParts(b, at)) {
          if (part.type === "input_text") texts.push(part.text)
          else attachments.push(part)
        }
      } else {
        // Tool-result block kinds without an equivalent (search_result, tool_reference, ...):
        // the model still reads them, as JSON.
        texts.push(JSON.stringify(b))
      }
    })
  }
  let output = texts.join("\n")
  if (attachments.length > 0) {
    const note = `[${attachments.length} attachment(s) from this tool result follow in the next user message]`
    output = output === "" ? note : `${output}\n${note}`
  }
  if (block["is_error"] === true && !SAYS_ERROR.test(output)) output = ERROR_PREFIX + output
  return { callId, output, attachments }
}
