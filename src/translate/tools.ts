/**
 * Responses `tools` / `tool_choice` / `parallel_tool_calls` -> Anthropic `tools` / `tool_choice`.
 */
import { isRecord, reject } from "./error.js"
import { upstreamToolName } from "./names.js"
import type { AnthropicTool, AnthropicToolChoice } from "./types.js"

/**
 * Web search tools are dropped rather than refused: Codex sends one on every request, and
 * answering without search is better than failing every Codex turn. The model just lacks search.
 */
const DROPPED_TOOLS: ReadonlySet<string> = new Set([
  "web_search",
  "web_search_preview",
  "web_search_2025_08_26",
  "web_search_preview_2025_03_11"
])

/** `parameters` -> `input_schema`: Anthropic wants an object schema and has no use for `$schema`. */
const inputSchema = (parameters: unknown, path: string): Record<string, unknown> => {
  if (parameters === undefined || parameters === null) return { type: "object", properties: {} }
  if (!isRecord(parameters)) return reject("parameters must be a JSON Schema object", path)
  const { $schema: _ignored, ...rest } = parameters
  if (rest["type"] === undefined) return { type: "object", ...rest }
  if (rest["type"] !== "object") return reject("function parameters must be a JSON Schema of type 'object'", `${path}.type`)
  return rest
}

const functionTool = (tool: Record<string, unknown>, path: string, namespace?: string): AnthropicTool => {
  const name = tool["name"]
  if (typeof name !== "string" || name === "") return reject("function tools need a name", `${path}.name`)
  const description = typeof tool["description"] === "string" && tool["description"] !== ""
    ? { description: tool["description"] }
    : {}
  return { name: upstreamToolName(name, namespace), ...description, input_schema: inputSchema(tool["parameters"], `${path}.parameters`) }
}

/**
 * A freeform `custom` tool (Codex's apply_patch on some models): Anthropic has no such tool kind,
 * so it becomes a tool with one string field; the grammar, which Anthropic cannot enforce, goes
 * into the description so the model still sees it. Calls come back as custom_tool_call.
 */
const customTool = (tool: Record<string, unknown>, path: string, namespace?: string): AnthropicTool => {
  const name = tool["name"]
  if (typeof name !== "string" || name === "") return reject("custom tools need a name", `${path}.name`)
  const format = isRecord(tool["format"]) ? tool["format"] : {}
  const grammar = format["type"] === "grammar" && typeof format["definition"] === "string"
    ? `\n\nThe input must follow this ${String(format["syntax"] ?? "")} grammar:\n${format["definition"]}`
    : ""
  const description = (typeof tool["description"] === "string" ? tool["description"] : "") + grammar
  return {
    name: upstreamToolName(name, namespace),
    ...(description !== "" ? { description } : {}),
    input_schema: {
      type: "object",
      properties: { input: { type: "string", description: "The raw input for this tool." } },
      required: ["input"]
    }
  }
}

const unsupportedTool = (type: string, path: string): never =>
  reject(`Tool type '${type}' is not supported on this model`, `${path}.type`)

export const translateTools = (tools: unknown): Array<AnthropicTool> => {
  if (tools === undefined || tools === null) return []
  if (!Array.isArray(tools)) return reject("tools must be an array", "tools")
  return tools.flatMap((tool, i): Array<AnthropicTool> => {
    const path = `tools[${i}]`
    if (!isRecord(tool)) return reject("each tool must be an object", path)
    const type = String(tool["type"])
    if (type === "function") return [functionTool(tool, path)]
    if (type === "custom") return [customTool(tool, path)]
    if (DROPPED_TOOLS.has(type)) return []
    if (type === "namespace") {
      const ns = tool["name"]
      const children = tool["tools"]
      if (typeof ns !== "string" || ns === "") return reject("namespace tools need a name", `${path}.name`)
      if (!Array.isArray(children)) return reject("namespace tools need a tools array", `${path}.tools`)
      return children.map((child, j) => {
        const childPath = `${path}.tools[${j}]`
        if (!isRecord(child)) return reject("each tool must be an object", childPath)
        if (child["type"] === "custom") return customTool(child, childPath, ns)
        if (child["type"] !== undefined && child["type"] !== "function") return unsupportedTool(String(child["type"]), childPath)
        return functionTool(child, childPath, ns)
      })
    }
    return unsupportedTool(type, path)
  })
}

/** The chosen tool's upstream name, from `{type:"function",name}` or the legacy `{function:{name}}`. */
const chosenName = (choice: Record<string, unknown>): string | undefined => {
  const fn = choice["function"]
  const name = typeof choice["name"] === "string" ? choice["name"] : isRecord(fn) && typeof fn["name"] === "string" ? fn["name"] : undefined
  if (name === undefined) return undefined
  return upstreamToolName(name, typeof choice["namespace"] === "string" ? choice["namespace"] : undefined)
}

export interface ToolSelection {
  readonly tools: ReadonlyArray<AnthropicTool>
  readonly choice: AnthropicToolChoice | undefined
}

/** Applies `tool_choice` (which may also narrow the tools list) and `parallel_tool_calls`. */
export const selectTools = (
  tools: ReadonlyArray<AnthropicTool>,
  toolChoice: unknown,
  parallelToolCalls: unknown
): ToolSelection => {
  let selected = tools
  let choice: AnthropicToolChoice | undefined
  if (toolChoice === undefined || toolChoice === null) choice = undefined
  else if (toolChoice === "auto") choice = { type: "auto" }
  else if (toolChoice === "required") choice = { type: "any" }
  else if (toolChoice === "none") choice = { type: "none" }
  else if (isRecord(toolChoice)) {
    const type = toolChoice["type"]
    if (type === "function" || type === "custom" || (type === undefined && isRecord(toolChoice["function"]))) {
      const name = chosenName(toolChoice)
      if (name === undefined) return reject("tool_choice needs the tool's name", "tool_choice.name")
      choice = { type: "tool", name }
    } else if (type === "allowed_tools") {
      const allowed = toolChoice["tools"]
      if (!Array.isArray(allowed)) return reject("allowed_tools needs a tools array", "tool_choice.tools")
      const names = new Set(allowed.flatMap((t) => (isRecord(t) ? [chosenName(t)] : [])))
      selected = tools.filter((t) => names.has(t.name))
      choice = toolChoice["mode"] === "required" ? { type: "any" } : { type: "auto" }
    } else if (typeof type === "string" && DROPPED_TOOLS.has(type)) {
      choice = { type: "auto" }
    } else {
      return reject(`tool_choice type '${String(type)}' is not supported on this model`, "tool_choice.type")
    }
  } else {
    return reject("tool_choice must be 'auto', 'required', 'none' or an object", "tool_choice")
  }
  // Anthropic rejects tool_choice without tools; with none to call, there is nothing to choose.
  if (selected.length === 0) return { tools: [], choice: undefined }
  if (parallelToolCalls === false && choice?.type !== "none") {
    choice = { ...(choice ?? { type: "auto" }), disable_parallel_tool_use: true }
  }
  return { tools: selected, choice }
}
