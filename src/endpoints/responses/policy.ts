/**
 * Request policy as plain functions over the decoded request: what text moderation reads, whether
 * a request intends image generation, and the provider tools it asks for. Tested without HTTP.
 */
import type { Platform } from "../../domain/config.js"
import { isImageModel } from "../../domain/modelList.js"
import { type ProviderTool, providerToolsIn, responsesToolOf } from "../../domain/providerTools.js"
import { roughTokens } from "../kit/roughTokens.js"

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined

const pushContentText = (content: unknown, out: Array<string>): void => {
  if (typeof content === "string") {
    out.push(content)
    return
  }
  if (!Array.isArray(content)) return
  for (const part of content) {
    const p = asRecord(part)
    if (p && typeof p["text"] === "string") out.push(p["text"])
  }
}

/** Every text the request carries that a model will read: instructions, messages, tool outputs. */
export const moderationTexts = (body: Record<string, unknown>): Array<string> => {
  const out: Array<string> = []
  if (typeof body["instructions"] === "string") out.push(body["instructions"])
  const input = body["input"]
  if (typeof input === "string") out.push(input)
  else if (Array.isArray(input)) {
    for (const raw of input) {
      const item = asRecord(raw)
      if (!item) continue
      if ("content" in item) pushContentText(item["content"], out)
      if ("output" in item) pushContentText(item["output"], out)
    }
  }
  return out
}

const IMAGE_TOOL = "image_generation"
const IMAGE_ITEM = "image_generation_call"

/**
 * A tool name that says image generation: the hosted tool's own name, or a namespace / custom tool
 * such as `image_gen`, `image_gen.create`, `image_gen__edit`. Ordinary functions that merely mention
 * images (`generate_report`, `image_generator_docs`) are not intent.
 */
const isImageName = (name: unknown): boolean =>
  typeof name === "string" && (name === IMAGE_TOOL || /^image_gen(\.|__|$)/.test(name))

const isImageTool = (raw: unknown): boolean => {
  const tool = asRecord(raw)
  if (!tool) return false
  if (tool["type"] === IMAGE_TOOL || isImageName(tool["name"])) return true
  // A namespace carries its children: `{type: "namespace", name: "media", tools: [{name: "image_gen"}]}`.
  const children = tool["tools"]
  return Array.isArray(children) && children.some(isImageTool)
}

const choiceSelectsImage = (choice: unknown): boolean => {
  if (choice === IMAGE_TOOL) return true
  const c = asRecord(choice)
  if (!c) return false
  if (c["type"] === IMAGE_TOOL || isImageName(c["name"])) return true
  if (asRecord(c["tool"])?.["type"] === IMAGE_TOOL) return true
  if (isImageName(asRecord(c["function"])?.["name"])) return true
  // `allowed_tools` lists what the model may call: an image tool among them is intent.
  const allowed = c["tools"]
  return Array.isArray(allowed) && allowed.some(isImageTool)
}

/**
 * Image-generation intent on a normalised view of the request: an image model, an image tool
 * (hosted, namespaced or custom), a tool_choice that selects one, or image-generation items carried
 * in the input (a client replaying an earlier image call).
 */
export const wantsImageGeneration = (body: Record<string, unknown>): boolean => {
  const model = body["model"]
  if (typeof model === "string" && isImageModel(model)) return true
  const tools = body["tools"]
  if (Array.isArray(tools) && tools.some(isImageTool)) return true
  if (choiceSelectsImage(body["tool_choice"])) return true
  const input = body["input"]
  return Array.isArray(input) && input.some((raw) => {
    const type = asRecord(raw)?.["type"]
    return type === IMAGE_ITEM || type === IMAGE_TOOL
  })
}

/**
 * For groups without image capability: removes image_generation_call items an upstream returned
 * on its own. Returns whether anything was removed (the body is changed in place).
 */
export const stripImageCalls = (response: Record<string, unknown>): boolean => {
  const output = response["output"]
  if (!Array.isArray(output)) return false
  const kept = output.filter((item) => asRecord(item)?.["type"] !== IMAGE_ITEM)
  if (kept.length === output.length) return false
  response["output"] = kept
  return true
}

/**
 * A quick count of the tokens a request will cost (characters / 4 of its text and of its tool
 * definitions, which models read too), for admitting it under a tokens-per-minute limit; the
 * settlement replaces it with what the upstream reports. Images and files are left out: their
 * base64 says nothing about their tokens.
 */
export const roughInputTokens = (body: Record<string, unknown>): number => roughTokens(moderationTexts(body), body["tools"])

/**
 * The provider tools (billed per call upstream) a request gives its upstream: the hosted tools in
 * `tools` on an `openai` group. A Messages-style group's translation drops web search and refuses
 * the others (translate/tools.ts): nothing of the kind reaches it.
 */
export const providerTools = (body: Record<string, unknown>, platform: Platform): ReadonlyArray<ProviderTool> =>
  platform === "openai" ? providerToolsIn(body["tools"], responsesToolOf) : []
