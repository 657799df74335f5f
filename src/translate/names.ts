/**
 * Tool names and call ids, made acceptable to Anthropic and reversible for the client.
 *
 * Anthropic accepts tool names matching ^[a-zA-Z0-9_-]{1,64}$ (64 for older models) and ids matching
 * ^[a-zA-Z0-9_-]+$. Clients send namespaced tools (Codex's `namespace` tools), MCP-style names with
 * dots or slashes, and arbitrary call ids. Both mappings are deterministic, so the same input gives
 * the same name or id in every request of a conversation (the history's tool_use ids and names must
 * match what the tools list and tool_results say).
 */
import { createHash } from "node:crypto"
import type { ToolNameEntry, ToolNameMap } from "./types.js"

const MAX_TOOL_NAME = 64
const VALID = /^[a-zA-Z0-9_-]+$/

const shortHash = (s: string): string => createHash("sha256").update(s).digest("hex").slice(0, 8)

/**
 * The Anthropic name for a client tool: `ns__child` for namespace children, unchanged when valid.
 * Names with invalid characters or longer than 64 get their bad characters replaced and a hash of
 * the original appended, so two different client names never collide.
 */
export const upstreamToolName = (name: string, namespace?: string): string => {
  const joined = namespace === undefined || namespace === "" ? name : `${namespace}__${name}`
  if (VALID.test(joined) && joined.length <= MAX_TOOL_NAME) return joined
  const cleaned = joined.replace(/[^a-zA-Z0-9_-]/g, "_")
  const suffix = `_${shortHash(joined)}`
  return cleaned.slice(0, MAX_TOOL_NAME - suffix.length) + suffix
}

/**
 * The Anthropic id for a client call id. Valid ids (including the `toolu_…` ids we hand out) pass
 * through untouched, so the client sees the same id it will send back.
 */
export const upstreamCallId = (callId: string): string => {
  if (VALID.test(callId)) return callId
  const cleaned = callId.replace(/[^a-zA-Z0-9_-]/g, "_")
  return `${cleaned}_${shortHash(callId)}`
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Every renamed tool of a request: upstream name -> client name (and namespace). Built from the
 * request's `tools` with the same rules the request translation uses, so the response translation
 * can restore names without seeing the request translation's internals.
 */
export const toolNameMap = (body: Record<string, unknown>): ToolNameMap => {
  const map = new Map<string, ToolNameEntry>()
  const add = (tool: Record<string, unknown>, namespace?: string) => {
    const name = tool["name"]
    if (typeof name !== "string") return
    const custom = tool["type"] === "custom"
    const upstream = upstreamToolName(name, namespace)
    const entry: ToolNameEntry = {
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      ...(custom ? { custom } : {})
    }
    if (upstream !== name || namespace !== undefined || custom) map.set(upstream, entry)
  }
  const tools = body["tools"]
  if (!Array.isArray(tools)) return map
  for (const tool of tools) {
    if (!isRecord(tool)) continue
    if (tool["type"] === "function" || tool["type"] === "custom") add(tool)
    if (tool["type"] === "namespace" && typeof tool["name"] === "string" && Array.isArray(tool["tools"])) {
      const ns = tool["name"]
      for (const child of tool["tools"]) {
        if (isRecord(child)) add(child, ns)
      }
    }
  }
  return map
}

/** The client's view of an upstream tool name. */
export const restoreToolName = (upstream: string, names: ToolNameMap | undefined): ToolNameEntry =>
  names?.get(upstream) ?? { name: upstream }
